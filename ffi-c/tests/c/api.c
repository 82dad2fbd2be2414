/* The C ABI of seawall, from C: versions, every NULL argument, every invalid
 * configuration field, a breaker scenario worked out by hand from DESIGN.md §3,
 * single-use permits, deadlines (§6), caller memory and named shared regions
 * (§8). Every expected value below is written from the spec, not read back from
 * the library. */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define MS 1000000ull
#define SEC 1000000000ull

static uint64_t c_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static void versions_and_clock(void) {
  char want[128];
  uint64_t before, now, after;

  CHECK(seawall_abi_version() == SEAWALL_ABI_VERSION);
  CHECK_STATUS(seawall_abi_check(SEAWALL_ABI_VERSION), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_abi_check(SEAWALL_ABI_VERSION + 1), SEAWALL_STATUS_ABI_MISMATCH);
  sprintf(want, "program compiled against seawall.h ABI version %u, library is ABI version %u",
          (unsigned)(SEAWALL_ABI_VERSION + 1), (unsigned)SEAWALL_ABI_VERSION);
  CHECK_MESSAGE(want);
  CHECK(strcmp(seawall_version(), SEAWALL_VERSION) == 0);
  sprintf(want, "%d.%d.%d", SEAWALL_VERSION_MAJOR, SEAWALL_VERSION_MINOR, SEAWALL_VERSION_PATCH);
  CHECK(strcmp(seawall_version(), want) == 0);

  CHECK(strcmp(seawall_status_name(SEAWALL_STATUS_OK), "SEAWALL_STATUS_OK") == 0);
  CHECK(strcmp(seawall_status_name(SEAWALL_STATUS_PERMIT_ALREADY_USED),
               "SEAWALL_STATUS_PERMIT_ALREADY_USED") == 0);
  CHECK(strcmp(seawall_status_name(999), "unknown") == 0);
  CHECK(strcmp(seawall_state_name(SEAWALL_STATE_HALF_OPEN), "half_open") == 0);
  CHECK(strcmp(seawall_state_name(SEAWALL_STATE_FORCED_OPEN), "forced_open") == 0);
  CHECK(strcmp(seawall_state_name(77), "unknown") == 0);
  /* The status values are ABI: fixed numbers. */
  CHECK(SEAWALL_STATUS_OK == 0 && SEAWALL_STATUS_NULL_ARGUMENT == 1 &&
        SEAWALL_STATUS_INVALID_CONFIG == 2 && SEAWALL_STATUS_REJECTED == 3 &&
        SEAWALL_STATUS_PERMIT_ALREADY_USED == 4 && SEAWALL_STATUS_ABI_MISMATCH == 5 &&
        SEAWALL_STATUS_IO_ERROR == 6 && SEAWALL_STATUS_PANIC == 7);

  /* seawall_now_ns is CLOCK_MONOTONIC: bracketed by our own readings of it. */
  before = c_monotonic_ns();
  now = seawall_now_ns();
  after = c_monotonic_ns();
  CHECK(before <= now && now <= after);
}

static seawall_breaker_config count_config(uint32_t size, uint64_t minimum) {
  seawall_breaker_config c = seawall_breaker_config_default();
  c.window_kind = SEAWALL_WINDOW_COUNT;
  c.window_size = size;
  c.window_bucket_width_ns = 0; /* time windows only */
  c.minimum_calls = minimum;
  return c;
}

static void default_config(void) {
  seawall_breaker_config c = seawall_breaker_config_default();
  /* DESIGN §3 defaults. */
  CHECK(c.window_kind == SEAWALL_WINDOW_TIME);
  CHECK_U64(c.window_size, 10);
  CHECK_U64(c.window_bucket_width_ns, 1 * SEC);
  CHECK_U64(c.minimum_calls, 20);
  CHECK_U64(c.failure_rate_threshold_ppm, 500000);
  CHECK_U64(c.slow_call_rate_threshold_ppm, 1000000);
  CHECK_U64(c.slow_call_duration_ns, SEAWALL_NONE);
  CHECK_U64(c.consecutive_failures, SEAWALL_NONE);
  CHECK_U64(c.open_duration_ns, 30 * SEC);
  CHECK_U64(c.open_backoff_multiplier_ppm, 1000000);
  CHECK_U64(c.max_open_duration_ns, 300 * SEC);
  CHECK_U64(c.open_jitter_factor_ppm, 0);
  CHECK_U64(c.half_open_max_calls, 1);
  CHECK_U64(c.half_open_success_threshold, 1);
  CHECK_U64(c.half_open_max_wait_ns, SEAWALL_NONE);
}

static void null_arguments(void) {
  seawall_breaker_config cfg = count_config(10, 10);
  seawall_breaker *b = NULL;
  seawall_breaker *out = (seawall_breaker *)&cfg; /* must be reset to NULL */
  seawall_permit p;
  seawall_state st;
  uint32_t epoch;
  uint64_t ns;
  bool flag;
  seawall_breaker_metrics m;
  seawall_deadline d = {0, 10};
  char mem[64];

  CHECK_STATUS(seawall_breaker_new(NULL, &out), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("config is NULL");
  CHECK(out == NULL);
  CHECK_STATUS(seawall_breaker_new(&cfg, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(seawall_breaker_new(&cfg, &b), SEAWALL_STATUS_OK);
  CHECK(b != NULL);

  CHECK_STATUS(seawall_breaker_try_acquire(NULL, 0, &p, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("breaker is NULL");
  CHECK_STATUS(seawall_breaker_try_acquire(b, 0, NULL, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out_permit is NULL");
  CHECK_STATUS(seawall_breaker_try_acquire(b, 0, &p, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(NULL, p, SEAWALL_OUTCOME_SUCCESS, 0, 0),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, 0), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_state(NULL, &st), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_state(b, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_epoch(NULL, &epoch), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_epoch(b, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_retry_after(NULL, 0, &ns), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_retry_after(b, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("out_ns is NULL");
  CHECK_STATUS(seawall_breaker_get_metrics(NULL, 0, &m), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_get_metrics(b, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_created(NULL, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_created(b, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_get_config(NULL, &cfg), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_get_config(b, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_force_open(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_disable(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_reset(NULL), SEAWALL_STATUS_NULL_ARGUMENT);

  out = (seawall_breaker *)&cfg;
  CHECK_STATUS(seawall_breaker_open_shared(NULL, &cfg, &out), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("name is NULL");
  CHECK(out == NULL);
  CHECK_STATUS(seawall_breaker_open_shared("x", NULL, &out), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_open_shared("x", &cfg, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_unlink_shared(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_init_in(NULL, 4096, &cfg, &out), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("mem is NULL");
  CHECK_STATUS(seawall_breaker_init_in(mem, sizeof mem, NULL, &out),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_init_in(mem, sizeof mem, &cfg, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_attach(NULL, 4096, &out), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_breaker_attach(mem, sizeof mem, NULL), SEAWALL_STATUS_NULL_ARGUMENT);

  CHECK_STATUS(seawall_deadline_start(10, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_remaining(NULL, 0, &ns), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("deadline is NULL");
  CHECK_STATUS(seawall_deadline_remaining(&d, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_expired(NULL, 0, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_expired(&d, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_allocate(NULL, 1, 0, &ns), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_allocate(&d, 1, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_deadline_child(NULL, 1, 0, &d), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("parent is NULL");
  CHECK_STATUS(seawall_deadline_child(&d, 1, 0, NULL), SEAWALL_STATUS_NULL_ARGUMENT);

  seawall_breaker_free(NULL); /* fine */
  seawall_breaker_free(b);
}

/* One invalid field: the status and the exact message naming it. */
static void invalid(seawall_breaker_config c, const char *message) {
  seawall_breaker *b = (seawall_breaker *)&c;
  CHECK_STATUS(seawall_breaker_new(&c, &b), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE(message);
  CHECK(b == NULL);
}

static void invalid_configs(void) {
  seawall_breaker_config c;

  c = count_config(0, 10);
  invalid(c, "invalid window.size: must not be zero");
  c = count_config(SEAWALL_COUNT_WINDOW_MAX + 1, 10);
  invalid(c, "invalid window.size: must be between 1 and 1024");
  c = seawall_breaker_config_default();
  c.window_size = SEAWALL_TIME_WINDOW_MAX_BUCKETS + 1;
  invalid(c, "invalid window.buckets: must be between 1 and 128");
  c = seawall_breaker_config_default();
  c.window_size = 0;
  invalid(c, "invalid window.buckets: must not be zero");
  c = seawall_breaker_config_default();
  c.window_bucket_width_ns = 0;
  invalid(c, "invalid window.bucket_width: must not be zero");
  c = seawall_breaker_config_default();
  c.window_kind = 2;
  invalid(c, "invalid window.kind: 2 is neither SEAWALL_WINDOW_COUNT (0) nor SEAWALL_WINDOW_TIME (1)");
  c = count_config(10, 0);
  invalid(c, "invalid minimum_calls: must not be zero");
  c = count_config(10, 4294967296ull);
  invalid(c, "invalid minimum_calls: must be between 1 and 4294967295");
  c = count_config(10, 10);
  c.failure_rate_threshold_ppm = 1000001;
  invalid(c, "invalid failure_rate_threshold: must be between 0 and 1000000");
  c = count_config(10, 10);
  c.slow_call_rate_threshold_ppm = 2000000;
  invalid(c, "invalid slow_call_rate_threshold: must be between 0 and 1000000");
  c = count_config(10, 10);
  c.consecutive_failures = 0;
  invalid(c, "invalid consecutive_failures: must not be zero");
  c = count_config(10, 10);
  c.consecutive_failures = 4194304;
  invalid(c, "invalid consecutive_failures: must be between 1 and 4194303");
  c = count_config(10, 10);
  c.open_duration_ns = 0;
  invalid(c, "invalid open_duration: must not be zero");
  c = count_config(10, 10);
  c.open_backoff_multiplier_ppm = 999999;
  invalid(c, "invalid open_backoff_multiplier: must be between 1000000 and 18446744073709551615");
  c = count_config(10, 10);
  c.max_open_duration_ns = c.open_duration_ns - 1;
  invalid(c, "invalid max_open_duration: must not be less than open_duration");
  c = count_config(10, 10);
  c.open_jitter_factor_ppm = 1000001;
  invalid(c, "invalid open_jitter_factor: must be between 0 and 1000000");
  c = count_config(10, 10);
  c.half_open_max_calls = 0;
  invalid(c, "invalid half_open_max_calls: must not be zero");
  c = count_config(10, 10);
  c.half_open_max_calls = 2048;
  invalid(c, "invalid half_open_max_calls: must be between 1 and 2047");
  c = count_config(10, 10);
  c.half_open_success_threshold = 0;
  invalid(c, "invalid half_open_success_threshold: must not be zero");
  c = count_config(10, 10);
  c.half_open_max_wait_ns = 0;
  invalid(c, "invalid half_open_max_wait: must not be zero");
}

static seawall_breaker_metrics metrics(const seawall_breaker *b, uint64_t now) {
  seawall_breaker_metrics m;
  memset(&m, 0xAB, sizeof m);
  CHECK_STATUS(seawall_breaker_get_metrics(b, now, &m), SEAWALL_STATUS_OK);
  return m;
}

static seawall_state state(const seawall_breaker *b) {
  seawall_state s = 99;
  CHECK_STATUS(seawall_breaker_state(b, &s), SEAWALL_STATUS_OK);
  return s;
}

/* One call: acquire at `now` and record `outcome` at once. */
static void call(const seawall_breaker *b, uint64_t now, seawall_outcome outcome) {
  seawall_permit p;
  CHECK_STATUS(seawall_breaker_try_acquire(b, now, &p, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(b, p, outcome, 0, now), SEAWALL_STATUS_OK);
}

static void breaker_lifecycle(void) {
  /* Count window 10, minimum 10, failure rate 50 %, open 1 s; two probes in
   * half-open, two successes close. DESIGN §3.1 oracle: 5 F + 5 S opens on the
   * 10th call. */
  seawall_breaker_config cfg = count_config(10, 10);
  seawall_breaker *b = NULL;
  seawall_permit p1, p2, p3, before;
  seawall_rejection r;
  seawall_breaker_metrics m, m2;
  uint64_t t0 = 5 * SEC, ns;
  uint32_t epoch;
  int i;

  cfg.open_duration_ns = 1 * SEC;
  cfg.half_open_max_calls = 2;
  cfg.half_open_success_threshold = 2;
  CHECK_STATUS(seawall_breaker_new(&cfg, &b), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_CLOSED);

  for (i = 0; i < 5; i++) call(b, t0, SEAWALL_OUTCOME_FAILURE);
  for (i = 0; i < 4; i++) call(b, t0, SEAWALL_OUTCOME_SUCCESS);
  m = metrics(b, t0);
  CHECK(m.state == SEAWALL_STATE_CLOSED); /* 9 calls < minimum 10: no decision */
  CHECK_U64(m.window_calls, 9);
  CHECK_U64(m.window_failures, 5);
  CHECK_U64(m.failure_rate_ppm, 555555); /* floor(5/9 · 10^6) */
  CHECK_U64(m.retry_after_ns, SEAWALL_NONE);
  CHECK_U64(m.admitted, 9);
  CHECK_U64(m.permits_outstanding, 0);

  call(b, t0, SEAWALL_OUTCOME_SUCCESS); /* 10th: 50 % → open until t0 + 1 s */
  CHECK(state(b) == SEAWALL_STATE_OPEN);
  m = metrics(b, t0 + 400 * MS);
  CHECK_U64(m.transitions, 1);
  CHECK_U64(m.openings, 1);
  CHECK_U64(m.retry_after_ns, 600 * MS);

  memset(&r, 0, sizeof r);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + 400 * MS, &p1, &r), SEAWALL_STATUS_REJECTED);
  CHECK(r.state == SEAWALL_STATE_OPEN);
  CHECK_U64(r.retry_after_ns, 600 * MS);
  CHECK_STATUS(seawall_breaker_retry_after(b, t0 + 999 * MS, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 1 * MS);

  /* At open_until: two probes admitted, the third rejected in half-open. */
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + SEC, &p1, &r), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_HALF_OPEN);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + SEC, &p2, &r), SEAWALL_STATUS_OK);
  CHECK_U64(p1.epoch, 2); /* closed 0 → open 1 → half-open 2 */
  CHECK_U64(p2.epoch, 2);
  CHECK(p1.id != p2.id);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + SEC, &p3, &r), SEAWALL_STATUS_REJECTED);
  CHECK(r.state == SEAWALL_STATE_HALF_OPEN);
  CHECK_U64(r.retry_after_ns, SEAWALL_NONE);

  CHECK_STATUS(seawall_breaker_record(b, p1, SEAWALL_OUTCOME_SUCCESS, 0, t0 + SEC),
               SEAWALL_STATUS_OK);
  m = metrics(b, t0 + SEC);
  CHECK(m.state == SEAWALL_STATE_HALF_OPEN);
  CHECK_U64(m.half_open_in_flight, 1);
  CHECK_U64(m.half_open_successes, 1);
  CHECK_U64(m.permits_outstanding, 1);

  /* A permit used twice: an error code, and nothing changes. */
  CHECK_STATUS(seawall_breaker_record(b, p1, SEAWALL_OUTCOME_FAILURE, 0, t0 + SEC),
               SEAWALL_STATUS_PERMIT_ALREADY_USED);
  CHECK_MESSAGE_HAS("already used");
  m2 = metrics(b, t0 + SEC);
  CHECK(memcmp(&m, &m2, sizeof m) == 0);

  CHECK_STATUS(seawall_breaker_record(b, p2, SEAWALL_OUTCOME_SUCCESS, 0, t0 + SEC),
               SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_CLOSED);
  CHECK_STATUS(seawall_breaker_epoch(b, &epoch), SEAWALL_STATUS_OK);
  CHECK_U64(epoch, 3);
  m = metrics(b, t0 + SEC);
  CHECK_U64(m.transitions, 3);
  CHECK_U64(m.admitted, 12);
  CHECK_U64(m.rejected, 2);
  CHECK_U64(m.successes, 7);
  CHECK_U64(m.failures, 5);
  CHECK_U64(m.window_calls, 0); /* closing starts an empty window */
  CHECK_STATUS(seawall_breaker_record(b, p2, SEAWALL_OUTCOME_SUCCESS, 0, t0 + SEC),
               SEAWALL_STATUS_PERMIT_ALREADY_USED);

  /* An unknown outcome or an altered permit is refused and leaves it usable. */
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + SEC, &p3, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(b, p3, 7, 0, t0 + SEC), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("invalid outcome 7: use SEAWALL_OUTCOME_SUCCESS (0), _FAILURE (1) or _IGNORED (2)");
  before = p3;
  p3.epoch += 1;
  CHECK_STATUS(seawall_breaker_record(b, p3, SEAWALL_OUTCOME_SUCCESS, 0, t0 + SEC),
               SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("altered");
  p3 = before;
  p3.id = (p3.id & ~0xFFFFFFFFull) | 5000u; /* a slot the table does not have */
  CHECK_STATUS(seawall_breaker_record(b, p3, SEAWALL_OUTCOME_SUCCESS, 0, t0 + SEC),
               SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("not a permit of this breaker");
  CHECK_STATUS(seawall_breaker_record(b, before, SEAWALL_OUTCOME_IGNORED, 0, t0 + SEC),
               SEAWALL_STATUS_OK);
  m = metrics(b, t0 + SEC);
  CHECK_U64(m.ignored, 1);
  CHECK_U64(m.permits_outstanding, 0);

  /* Manual control; a permit of the disabled period recorded after reset is
   * stale: it counts in the totals only. */
  CHECK_STATUS(seawall_breaker_force_open(b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + 2 * SEC, &p1, &r), SEAWALL_STATUS_REJECTED);
  CHECK(r.state == SEAWALL_STATE_FORCED_OPEN);
  CHECK_U64(r.retry_after_ns, SEAWALL_NONE);
  CHECK_STATUS(seawall_breaker_disable(b), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_DISABLED);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t0 + 2 * SEC, &p1, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_reset(b), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_CLOSED);
  CHECK_STATUS(seawall_breaker_record(b, p1, SEAWALL_OUTCOME_FAILURE, 0, t0 + 2 * SEC),
               SEAWALL_STATUS_OK);
  m = metrics(b, t0 + 2 * SEC);
  CHECK_U64(m.stale, 1);
  CHECK_U64(m.window_calls, 0);
  CHECK_U64(m.transitions, 6);
  seawall_breaker_free(b);
}

static void permits_of_another_breaker_and_exhaustion(void) {
  seawall_breaker_config cfg = count_config(10, 10);
  seawall_breaker *a = NULL, *b = NULL;
  seawall_permit p, *held;
  seawall_breaker_metrics m;
  uint32_t i;
  char want[128];

  CHECK_STATUS(seawall_breaker_new(&cfg, &a), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_new(&cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_try_acquire(a, 1, &p, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(b, p, SEAWALL_OUTCOME_FAILURE, 0, 1),
               SEAWALL_STATUS_PERMIT_ALREADY_USED);
  CHECK_U64(metrics(b, 1).failures, 0);
  CHECK_STATUS(seawall_breaker_record(a, p, SEAWALL_OUTCOME_SUCCESS, 0, 1), SEAWALL_STATUS_OK);

  /* SEAWALL_BREAKER_MAX_PERMITS outstanding: the next acquire is refused and its
   * admission given back as ignored. */
  held = malloc(sizeof *held * SEAWALL_BREAKER_MAX_PERMITS);
  CHECK_STATUS(seawall_breaker_disable(b), SEAWALL_STATUS_OK);
  for (i = 0; i < SEAWALL_BREAKER_MAX_PERMITS; i++) {
    if (seawall_breaker_try_acquire(b, 2, &held[i], NULL) != SEAWALL_STATUS_OK) break;
  }
  CHECK_U64(i, SEAWALL_BREAKER_MAX_PERMITS);
  CHECK_STATUS(seawall_breaker_try_acquire(b, 2, &p, NULL), SEAWALL_STATUS_PERMITS_EXHAUSTED);
  sprintf(want, "all %u permits of this breaker are outstanding: record the ones you hold",
          (unsigned)SEAWALL_BREAKER_MAX_PERMITS);
  CHECK_MESSAGE(want);
  m = metrics(b, 2);
  CHECK_U64(m.admitted, SEAWALL_BREAKER_MAX_PERMITS + 1);
  CHECK_U64(m.ignored, 1);
  CHECK_U64(m.permits_outstanding, SEAWALL_BREAKER_MAX_PERMITS);
  for (i = 0; i < SEAWALL_BREAKER_MAX_PERMITS; i++) {
    if (seawall_breaker_record(b, held[i], SEAWALL_OUTCOME_SUCCESS, 0, 3) != SEAWALL_STATUS_OK)
      break;
  }
  CHECK_U64(i, SEAWALL_BREAKER_MAX_PERMITS);
  m = metrics(b, 3);
  CHECK_U64(m.permits_outstanding, 0);
  CHECK_U64(m.successes, SEAWALL_BREAKER_MAX_PERMITS);
  free(held);
  seawall_breaker_free(a);
  seawall_breaker_free(b);
}

static void deadlines(void) {
  seawall_deadline d, child;
  uint64_t ns;
  bool expired;
  const uint64_t start = 1000;

  CHECK_STATUS(seawall_deadline_start(0, start, &d), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE("invalid deadline.total: must not be zero");
  CHECK_STATUS(seawall_deadline_start(100 * MS, start, &d), SEAWALL_STATUS_OK);
  CHECK_U64(d.start_ns, start);
  CHECK_U64(d.end_ns, start + 100 * MS);
  CHECK_STATUS(seawall_deadline_remaining(&d, start + 40 * MS, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 60 * MS);
  CHECK_STATUS(seawall_deadline_remaining(&d, 0, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 100 * MS); /* a clock before the start counts as the start */
  CHECK_STATUS(seawall_deadline_remaining(&d, start + 200 * MS, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 0);
  CHECK_STATUS(seawall_deadline_expired(&d, start + 100 * MS - 1, &expired), SEAWALL_STATUS_OK);
  CHECK(!expired);
  CHECK_STATUS(seawall_deadline_expired(&d, start + 100 * MS, &expired), SEAWALL_STATUS_OK);
  CHECK(expired); /* exactly at the end */
  CHECK_STATUS(seawall_deadline_allocate(&d, 30 * MS, start + 40 * MS, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 30 * MS);
  CHECK_STATUS(seawall_deadline_allocate(&d, 90 * MS, start + 40 * MS, &ns), SEAWALL_STATUS_OK);
  CHECK_U64(ns, 60 * MS);
  /* A child never outlives its parent. */
  CHECK_STATUS(seawall_deadline_child(&d, 200 * MS, start + 50 * MS, &child), SEAWALL_STATUS_OK);
  CHECK_U64(child.start_ns, start + 50 * MS);
  CHECK_U64(child.end_ns, start + 100 * MS);
  CHECK_STATUS(seawall_deadline_child(&d, 10 * MS, start + 50 * MS, &child), SEAWALL_STATUS_OK);
  CHECK_U64(child.end_ns, start + 60 * MS);
  /* The child may be written over its parent. */
  child = d;
  CHECK_STATUS(seawall_deadline_child(&child, 10 * MS, start, &child), SEAWALL_STATUS_OK);
  CHECK_U64(child.end_ns, start + 10 * MS);
  /* Saturating end. */
  CHECK_STATUS(seawall_deadline_start(UINT64_MAX - 5, 10, &d), SEAWALL_STATUS_OK);
  CHECK_U64(d.end_ns, UINT64_MAX);
  /* A deadline that ends before it starts is not one. */
  d.start_ns = 10;
  d.end_ns = 5;
  CHECK_STATUS(seawall_deadline_remaining(&d, 0, &ns), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE("invalid deadline: ends (5) before it starts (10)");
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void caller_memory(void) {
  size_t size = seawall_breaker_size(), align = seawall_breaker_align();
  seawall_breaker_config cfg = count_config(4, 4);
  seawall_breaker *a = NULL, *b = NULL;
  seawall_breaker_config got;
  seawall_permit p;
  unsigned char *mem = NULL;
  uint32_t abi;
  bool created;
  int i;

  CHECK(align == 128);
  CHECK(posix_memalign((void **)&mem, align, size + align) == 0);
  memset(mem, 0, size + align);
  CHECK_STATUS(seawall_breaker_init_in(mem + 8, size, &cfg, &a), SEAWALL_STATUS_BAD_REGION);
  CHECK_MESSAGE_HAS("is not aligned to 128 bytes");
  CHECK_STATUS(seawall_breaker_init_in(mem, size - 1, &cfg, &a), SEAWALL_STATUS_BAD_REGION);
  CHECK_MESSAGE_HAS("needs at least");
  CHECK_STATUS(seawall_breaker_attach(mem, size, &a), SEAWALL_STATUS_NOT_A_REGION);
  CHECK_STATUS(seawall_breaker_attach(mem, 64, &a), SEAWALL_STATUS_BAD_REGION);

  CHECK_STATUS(seawall_breaker_init_in(mem, size, &cfg, &a), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_attach(mem, size, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_created(a, &created), SEAWALL_STATUS_OK);
  CHECK(created);
  CHECK_STATUS(seawall_breaker_created(b, &created), SEAWALL_STATUS_OK);
  CHECK(!created);
  CHECK_STATUS(seawall_breaker_get_config(b, &got), SEAWALL_STATUS_OK);
  CHECK(memcmp(&got, &cfg, sizeof cfg) == 0);
  /* 4 failures through `a`, seen through `b`; a permit of one handle is
   * recorded through the other, once. */
  for (i = 0; i < 4; i++) call(a, 10, SEAWALL_OUTCOME_FAILURE);
  CHECK(state(b) == SEAWALL_STATE_OPEN);
  CHECK_STATUS(seawall_breaker_reset(b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_try_acquire(a, 11, &p, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, 11), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(a, p, SEAWALL_OUTCOME_SUCCESS, 0, 11),
               SEAWALL_STATUS_PERMIT_ALREADY_USED);
  seawall_breaker_free(b);
  b = NULL;

  /* The documented header: ABI version at byte 12, creator pid at 56 (under the
   * checksum). Another ABI is refused; a corrupted header is no region. */
  abi = get_u32(mem + 12);
  CHECK_U64(abi, SEAWALL_ABI_VERSION);
  put_u32(mem + 12, abi + 1);
  CHECK_STATUS(seawall_breaker_attach(mem, size, &b), SEAWALL_STATUS_ABI_MISMATCH);
  CHECK_MESSAGE_HAS("region made by seawall ABI version 2");
  put_u32(mem + 12, abi);
  put_u32(mem + 56, get_u32(mem + 56) ^ 1u);
  CHECK_STATUS(seawall_breaker_attach(mem, size, &b), SEAWALL_STATUS_NOT_A_REGION);
  CHECK_MESSAGE_HAS("checksum");
  put_u32(mem + 56, get_u32(mem + 56) ^ 1u);
  CHECK_STATUS(seawall_breaker_attach(mem, size, &b), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_CLOSED);

  seawall_breaker_free(a);
  seawall_breaker_free(b);
  free(mem);
}

static void named_regions(void) {
  seawall_breaker_config cfg = count_config(4, 4), other = cfg, time_cfg;
  seawall_breaker *a = NULL, *b = NULL, *c = NULL;
  char name[64], stuck[64], path[128], long_name[260];
  bool created;
  unsigned char header[16];
  FILE *f;
  int fd;

  sprintf(name, "c-api-test-%ld", (long)getpid());
  sprintf(stuck, "c-api-stuck-%ld", (long)getpid());
  seawall_breaker_unlink_shared(name);

  CHECK_STATUS(seawall_breaker_open_shared(name, &cfg, &a), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_open_shared(name, &cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_created(a, &created), SEAWALL_STATUS_OK);
  CHECK(created);
  CHECK_STATUS(seawall_breaker_created(b, &created), SEAWALL_STATUS_OK);
  CHECK(!created);
  CHECK_STATUS(seawall_breaker_force_open(a), SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_FORCED_OPEN);

  other.minimum_calls = 3;
  c = (seawall_breaker *)&cfg;
  CHECK_STATUS(seawall_breaker_open_shared(name, &other, &c), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_MESSAGE_HAS("region was created with another configuration");
  CHECK(c == NULL);
  other = cfg;
  other.jitter_seed ^= 12345; /* each process may draw its own seed */
  CHECK_STATUS(seawall_breaker_open_shared(name, &other, &c), SEAWALL_STATUS_OK);
  seawall_breaker_free(c);
  c = NULL;
  time_cfg = seawall_breaker_config_default();
  CHECK_STATUS(seawall_breaker_open_shared(name, &time_cfg, &c), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK_MESSAGE_HAS("not a time-window circuit breaker");

  /* Another ABI in the file. */
  sprintf(path, "/dev/shm/seawall-breaker-%s", name);
  f = fopen(path, "r+b");
  CHECK(f != NULL);
  if (f != NULL) {
    CHECK(fread(header, 1, sizeof header, f) == sizeof header);
    put_u32(header + 12, get_u32(header + 12) + 1);
    CHECK(fseek(f, 0, SEEK_SET) == 0);
    CHECK(fwrite(header, 1, sizeof header, f) == sizeof header);
    fclose(f);
  }
  CHECK_STATUS(seawall_breaker_open_shared(name, &cfg, &c), SEAWALL_STATUS_ABI_MISMATCH);

  /* Unlink: gone for newcomers, attached handles go on. */
  CHECK_STATUS(seawall_breaker_unlink_shared(name), SEAWALL_STATUS_OK);
  CHECK(access(path, F_OK) != 0);
  CHECK_STATUS(seawall_breaker_unlink_shared(name), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_reset(b), SEAWALL_STATUS_OK);
  CHECK(state(a) == SEAWALL_STATE_CLOSED);

  CHECK_STATUS(seawall_breaker_open_shared("a/b", &cfg, &c), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE_HAS("invalid region name \"a/b\"");
  CHECK_STATUS(seawall_breaker_open_shared("", &cfg, &c), SEAWALL_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(seawall_breaker_open_shared(".x", &cfg, &c), SEAWALL_STATUS_INVALID_ARGUMENT);
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[SEAWALL_REGION_NAME_MAX + 1] = '\0';
  CHECK_STATUS(seawall_breaker_open_shared(long_name, &cfg, &c), SEAWALL_STATUS_INVALID_ARGUMENT);
  long_name[SEAWALL_REGION_NAME_MAX] = '\0';
  CHECK_STATUS(seawall_breaker_open_shared(long_name, &cfg, &c), SEAWALL_STATUS_OK);
  seawall_breaker_free(c);
  c = NULL;
  CHECK_STATUS(seawall_breaker_unlink_shared(long_name), SEAWALL_STATUS_OK);

  /* A region whose creator never finished: a bounded wait, then TIMEOUT. */
  sprintf(path, "/dev/shm/seawall-breaker-%s", stuck);
  fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
  CHECK(fd >= 0);
  if (fd >= 0) {
    CHECK(ftruncate(fd, 4096) == 0);
    close(fd);
  }
  CHECK(setenv("SEAWALL_SHM_TIMEOUT_MS", "100", 1) == 0);
  CHECK_STATUS(seawall_breaker_open_shared(stuck, &cfg, &c), SEAWALL_STATUS_TIMEOUT);
  CHECK_MESSAGE_HAS("was not initialised within");
  CHECK(unsetenv("SEAWALL_SHM_TIMEOUT_MS") == 0);
  CHECK_STATUS(seawall_breaker_unlink_shared(stuck), SEAWALL_STATUS_OK);

  seawall_breaker_free(a);
  seawall_breaker_free(b);
}

/* A process killed while it holds a half-open probe: its permit is reclaimed (as
 * ignored), which frees the probe slot; a live process's permit is left alone. */
static void abandoned_permits(void) {
  seawall_breaker_config cfg = count_config(4, 4);
  seawall_breaker *b = NULL;
  seawall_permit mine, p;
  seawall_rejection r;
  seawall_breaker_metrics m;
  uint64_t reclaimed = 99;
  const uint64_t t = 10, probe_at = 10 + SEC;
  char name[64];
  pid_t child;
  int status = 0, i;

  cfg.open_duration_ns = SEC;
  sprintf(name, "c-api-abandoned-%ld", (long)getpid());
  seawall_breaker_unlink_shared(name);
  CHECK_STATUS(seawall_breaker_open_shared(name, &cfg, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_try_acquire(b, t, &mine, NULL), SEAWALL_STATUS_OK);
  for (i = 0; i < 4; i++) call(b, t, SEAWALL_OUTCOME_FAILURE); /* opens until t + 1 s */
  CHECK(state(b) == SEAWALL_STATE_OPEN);

  child = fork();
  if (child == 0) {
    seawall_breaker *cb = NULL;
    if (seawall_breaker_open_shared(name, &cfg, &cb) == SEAWALL_STATUS_OK &&
        seawall_breaker_try_acquire(cb, probe_at, &p, NULL) == SEAWALL_STATUS_OK) {
      kill(getpid(), SIGKILL); /* dies holding the probe */
    }
    _exit(3);
  }
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  CHECK_STATUS(seawall_breaker_try_acquire(b, probe_at, &p, &r), SEAWALL_STATUS_REJECTED);
  CHECK(r.state == SEAWALL_STATE_HALF_OPEN); /* the dead child's probe holds the slot */
  m = metrics(b, probe_at);
  CHECK_U64(m.permits_outstanding, 2);
  CHECK_U64(m.half_open_in_flight, 1);

  CHECK_STATUS(seawall_breaker_reclaim_abandoned(b, probe_at, &reclaimed), SEAWALL_STATUS_OK);
  CHECK_U64(reclaimed, 1); /* the child's; ours stays */
  m = metrics(b, probe_at);
  CHECK_U64(m.permits_outstanding, 1);
  CHECK_U64(m.half_open_in_flight, 0);
  CHECK_U64(m.ignored, 1);
  CHECK_STATUS(seawall_breaker_try_acquire(b, probe_at, &p, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, probe_at),
               SEAWALL_STATUS_OK);
  CHECK(state(b) == SEAWALL_STATE_CLOSED);
  CHECK_STATUS(seawall_breaker_record(b, mine, SEAWALL_OUTCOME_SUCCESS, 0, probe_at),
               SEAWALL_STATUS_OK); /* stale now, still ours to record once */
  CHECK_STATUS(seawall_breaker_reclaim_abandoned(b, probe_at, NULL), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_breaker_reclaim_abandoned(NULL, probe_at, &reclaimed),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_U64(metrics(b, probe_at).permits_outstanding, 0);
  seawall_breaker_free(b);
  CHECK_STATUS(seawall_breaker_unlink_shared(name), SEAWALL_STATUS_OK);
}

int main(void) {
  versions_and_clock();
  default_config();
  null_arguments();
  invalid_configs();
  breaker_lifecycle();
  permits_of_another_breaker_and_exhaustion();
  deadlines();
  if (seawall_shared_supported()) {
    caller_memory();
    named_regions();
    abandoned_permits();
  } else {
    /* Only native lock-free atomics may be shared: everything is refused. */
    seawall_breaker_config cfg = count_config(4, 4);
    seawall_breaker *b = NULL;
    printf("api: no native 128-bit atomics here: checking that sharing is refused\n");
    CHECK_STATUS(seawall_breaker_open_shared("c-api-refused", &cfg, &b),
                 SEAWALL_STATUS_NOT_LOCK_FREE);
  }
  return report("api");
}
