// The header compiles as C++11, included twice (include guards), and its
// functions link with C linkage (extern "C").
#include "seawall.h"
#include "seawall.h"

#include <cstdio>
#include <cstring>

int main() {
  int passed = 0, failed = 0;
  auto check = [&](bool ok, const char *what) {
    if (ok) {
      ++passed;
    } else {
      ++failed;
      std::fprintf(stderr, "failed: %s\n", what);
    }
  };
  seawall_breaker_config cfg = seawall_breaker_config_default();
  cfg.window_kind = SEAWALL_WINDOW_COUNT;
  cfg.window_size = 4;
  cfg.minimum_calls = 4;
  seawall_breaker *b = nullptr;
  check(seawall_abi_check(SEAWALL_ABI_VERSION) == SEAWALL_STATUS_OK, "abi");
  check(seawall_breaker_new(&cfg, &b) == SEAWALL_STATUS_OK, "new");
  seawall_permit p{};
  check(seawall_breaker_try_acquire(b, 1, &p, nullptr) == SEAWALL_STATUS_OK, "acquire");
  check(seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, 1) == SEAWALL_STATUS_OK,
        "record");
  check(seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, 1) ==
            SEAWALL_STATUS_PERMIT_ALREADY_USED,
        "second use");
  seawall_semaphore_config scfg = seawall_semaphore_config_default();
  scfg.max_concurrent = 1;
  seawall_semaphore *s = nullptr;
  seawall_semaphore_permit sp{};
  seawall_semaphore_rejection why{};
  check(seawall_semaphore_new(&scfg, &s) == SEAWALL_STATUS_OK, "semaphore");
  check(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_HIGH, &sp, nullptr) == SEAWALL_STATUS_OK,
        "semaphore acquire");
  check(seawall_semaphore_try_acquire(s, SEAWALL_PRIORITY_HIGH, &sp, &why) ==
                SEAWALL_STATUS_REJECTED &&
            why.reason == SEAWALL_REJECT_FULL,
        "semaphore full");
  check(seawall_semaphore_release(s, sp) == SEAWALL_STATUS_OK, "release");
  check(seawall_semaphore_release(s, sp) == SEAWALL_STATUS_PERMIT_ALREADY_USED, "second release");
  seawall_semaphore_free(s);
  seawall_backoff_config bcfg = seawall_backoff_config_default();
  bcfg.jitter = SEAWALL_JITTER_NONE;
  seawall_backoff_state st = seawall_backoff_state_new(1);
  uint64_t delay = 0;
  check(seawall_backoff_next_delay(&bcfg, &st, SEAWALL_NONE, &delay) == SEAWALL_STATUS_OK &&
            delay == 100000000u,
        "backoff");
  seawall_rate_limiter_config rcfg = seawall_rate_limiter_config_default();
  rcfg.burst = 1;
  seawall_rate_limiter *rl = nullptr;
  uint64_t retry_after = 0;
  check(seawall_rate_limiter_new(&rcfg, &rl) == SEAWALL_STATUS_OK, "rate limiter");
  check(seawall_rate_limiter_try_acquire(rl, 1, 0, &retry_after) == SEAWALL_STATUS_OK,
        "rate limiter admits");
  // 100 per second: one cell every 10 ms.
  check(seawall_rate_limiter_try_acquire(rl, 1, 0, &retry_after) == SEAWALL_STATUS_REJECTED &&
            retry_after == 10000000u,
        "rate limiter rejects");
  seawall_rate_limiter_free(rl);
  seawall_deadline d{};
  check(seawall_deadline_start(10, 5, &d) == SEAWALL_STATUS_OK && d.end_ns == 15, "deadline");
  check(std::strcmp(seawall_version(), SEAWALL_VERSION) == 0, "version");
  seawall_breaker_free(b);
  std::printf("cpp: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
