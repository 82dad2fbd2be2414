/* The rate limiter through the C ABI (DESIGN §10, GCRA): hand-worked figures
 * (T = period / rate rounded down, tau = T * (burst - 1); a request of n cells
 * at now is admitted iff max(TAT, now) + n*T - T - now <= tau, else it waits
 * that excess minus tau), NULL and invalid arguments, the keyed form, caller
 * memory and one limiter shared by two processes. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define MS 1000000ull
#define ALIGN 128
#define SEC 1000000000ull

/* 10 per second, burst 3: T = 100 ms, tau = 200 ms. */
/* Zeroed memory of `size` bytes at an ALIGN-aligned address; the caller frees it. */
static unsigned char *aligned_zeroed(size_t size) {
  void *p = NULL;
  if (posix_memalign(&p, ALIGN, size) != 0) return NULL;
  memset(p, 0, size);
  return (unsigned char *)p;
}

static seawall_rate_limiter_config ten_per_second(void) {
  seawall_rate_limiter_config c = seawall_rate_limiter_config_default();
  c.rate = 10;
  c.period_ns = 1 * SEC;
  c.burst = 3;
  return c;
}

static void defaults(void) {
  seawall_rate_limiter_config c = seawall_rate_limiter_config_default();
  CHECK_U64(c.rate, 100);
  CHECK_U64(c.period_ns, 1 * SEC);
  CHECK_U64(c.burst, 10);
  CHECK_U64(c.reserved, 0);
  CHECK_U64(SEAWALL_KEYED_RATE_LIMITER_SLOTS, 4096);
}

static void by_hand(void) {
  seawall_rate_limiter_config cfg = ten_per_second(), got;
  seawall_rate_limiter *l = NULL;
  uint64_t retry = 7;
  bool created = false;
  int i;

  CHECK_STATUS(seawall_rate_limiter_new(&cfg, &l), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_rate_limiter_created(l, &created), SEAWALL_STATUS_OK);
  CHECK(created);
  CHECK_STATUS(seawall_rate_limiter_get_config(l, &got), SEAWALL_STATUS_OK);
  CHECK(memcmp(&got, &cfg, sizeof cfg) == 0);
  for (i = 0; i < 3; i++) {
    CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 1, 0, &retry), SEAWALL_STATUS_OK);
    CHECK_U64(retry, 0);
  }
  /* TAT 300 ms: next 400, 400 - 100 - 0 = 300 > 200: wait 100 ms. */
  CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 1, 0, &retry), SEAWALL_STATUS_REJECTED);
  CHECK_U64(retry, 100 * MS);
  /* At 30 ms: next 400, 400 - 100 - 30 = 270 > 200: wait 70 ms. */
  CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 1, 30 * MS, &retry), SEAWALL_STATUS_REJECTED);
  CHECK_U64(retry, 70 * MS);
  CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 1, 100 * MS, NULL), SEAWALL_STATUS_OK);
  /* Two cells at 100 ms: next 600, 600 - 100 - 100 = 400: wait 200 ms. */
  CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 2, 100 * MS, &retry), SEAWALL_STATUS_REJECTED);
  CHECK_U64(retry, 200 * MS);
  /* n outside 1 ..= burst is a configuration error, nothing changes. */
  retry = 7;
  CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 0, 0, &retry), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE("invalid rate_limiter.n: must not be zero");
  CHECK_U64(retry, 7);
  CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 4, 0, &retry), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK_MESSAGE("invalid rate_limiter.n: must be between 1 and 3");
  /* After 10 s idle the whole burst is back: n = burst at once. */
  CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 3, 10 * SEC, &retry), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 1, 10 * SEC, &retry), SEAWALL_STATUS_REJECTED);
  CHECK_U64(retry, 100 * MS);
  seawall_rate_limiter_free(l);
  seawall_rate_limiter_free(NULL);
}

static void invalid(seawall_rate_limiter_config c, const char *message) {
  seawall_rate_limiter *l = (seawall_rate_limiter *)&c;
  seawall_keyed_rate_limiter *k = (seawall_keyed_rate_limiter *)&c;
  CHECK_STATUS(seawall_rate_limiter_new(&c, &l), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK(l == NULL);
  CHECK_MESSAGE(message);
  CHECK_STATUS(seawall_keyed_rate_limiter_new(&c, &k), SEAWALL_STATUS_INVALID_CONFIG);
  CHECK(k == NULL);
  CHECK_MESSAGE(message);
}

static void invalid_configs(void) {
  seawall_rate_limiter_config c = ten_per_second();
  c.rate = 0;
  invalid(c, "invalid rate_limiter.rate: must not be zero");
  c = ten_per_second();
  c.period_ns = 0;
  invalid(c, "invalid rate_limiter.period: must not be zero");
  c = ten_per_second();
  c.burst = 0;
  invalid(c, "invalid rate_limiter.burst: must not be zero");
  c = ten_per_second();
  c.rate = 1001;
  c.period_ns = 1000;
  invalid(c, "invalid rate_limiter.rate: must be between 1 and 1000");
}

static void null_arguments(void) {
  seawall_rate_limiter_config c = ten_per_second();
  seawall_rate_limiter *l = NULL, *lout = (seawall_rate_limiter *)&c;
  seawall_keyed_rate_limiter *k = NULL, *kout = (seawall_keyed_rate_limiter *)&c;
  unsigned char *mem = aligned_zeroed(4096);
  uint64_t retry;
  uint32_t slot;
  bool flag;

  CHECK_STATUS(seawall_rate_limiter_new(NULL, &lout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK(lout == NULL);
  CHECK_MESSAGE("config is NULL");
  CHECK_STATUS(seawall_rate_limiter_new(&c, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_open_shared(NULL, &c, &lout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_open_shared("x", NULL, &lout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_open_shared("x", &c, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_unlink_shared(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_init_in(NULL, 4096, &c, &lout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_init_in(mem, 4096, NULL, &lout),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_init_in(mem, 4096, &c, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_attach(NULL, 4096, &lout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_attach(mem, 4096, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_try_acquire(NULL, 1, 0, &retry), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_MESSAGE("limiter is NULL");
  CHECK_STATUS(seawall_rate_limiter_new(&c, &l), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_rate_limiter_created(NULL, &flag), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_created(l, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_get_config(NULL, &c), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_rate_limiter_get_config(l, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  seawall_rate_limiter_free(l);

  CHECK_STATUS(seawall_keyed_rate_limiter_new(NULL, &kout), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK(kout == NULL);
  CHECK_STATUS(seawall_keyed_rate_limiter_new(&c, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_keyed_rate_limiter_open_shared(NULL, &c, &kout),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_keyed_rate_limiter_open_shared("x", NULL, &kout),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_keyed_rate_limiter_open_shared("x", &c, NULL),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_keyed_rate_limiter_unlink_shared(NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_keyed_rate_limiter_init_in(NULL, 4096, &c, &kout),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_keyed_rate_limiter_init_in(mem, 4096, NULL, &kout),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_keyed_rate_limiter_attach(NULL, 4096, &kout),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire(NULL, 1, 1, 0, &retry),
               SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_keyed_rate_limiter_new(&c, &k), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_keyed_rate_limiter_slot_of(NULL, 1, &slot), SEAWALL_STATUS_NULL_ARGUMENT);
  CHECK_STATUS(seawall_keyed_rate_limiter_slot_of(k, 1, NULL), SEAWALL_STATUS_NULL_ARGUMENT);
  seawall_keyed_rate_limiter_free(k);
  seawall_keyed_rate_limiter_free(NULL);
  free(mem);
}

/* Two keys on different slots each get their own burst; keys on one slot
 * share it. */
static void keyed(void) {
  seawall_rate_limiter_config cfg = ten_per_second();
  seawall_keyed_rate_limiter *k = NULL;
  uint64_t retry, other, same;
  uint32_t s1, s;
  int i;

  CHECK_STATUS(seawall_keyed_rate_limiter_new(&cfg, &k), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_keyed_rate_limiter_slot_of(k, 1, &s1), SEAWALL_STATUS_OK);
  CHECK(s1 < SEAWALL_KEYED_RATE_LIMITER_SLOTS);
  other = same = 0;
  for (i = 2; i < 1000000 && (other == 0 || same == 0); i++) {
    CHECK_STATUS(seawall_keyed_rate_limiter_slot_of(k, (uint64_t)i, &s), SEAWALL_STATUS_OK);
    if (s != s1 && other == 0) other = (uint64_t)i;
    if (s == s1 && same == 0) same = (uint64_t)i;
  }
  CHECK(other != 0 && same != 0);
  for (i = 0; i < 3; i++)
    CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire(k, 1, 1, 0, &retry), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire(k, 1, 1, 0, &retry),
               SEAWALL_STATUS_REJECTED);
  CHECK_U64(retry, 100 * MS);
  /* The colliding key sees key 1's cells: stricter, never looser. */
  CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire(k, same, 1, 0, &retry),
               SEAWALL_STATUS_REJECTED);
  CHECK_U64(retry, 100 * MS);
  CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire(k, other, 3, 0, &retry), SEAWALL_STATUS_OK);
  CHECK_U64(retry, 0);
  CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire(k, other, 4, 0, &retry),
               SEAWALL_STATUS_INVALID_CONFIG);
  /* Byte-string keys: one key is one limit, whatever buffer holds it. */
  {
    const char *id = "client-42";
    char copy[16];
    memcpy(copy, id, 10);
    CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire_bytes(k, (const uint8_t *)id, 9, 3, 0, &retry),
                 SEAWALL_STATUS_OK);
    CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire_bytes(k, (const uint8_t *)copy, 9, 1, 0, &retry),
                 SEAWALL_STATUS_REJECTED);
    CHECK_U64(retry, 100 * MS);
    CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire_bytes(k, NULL, 0, 1, 0, &retry),
                 SEAWALL_STATUS_OK);
    CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire_bytes(k, NULL, 3, 1, 0, &retry),
                 SEAWALL_STATUS_NULL_ARGUMENT);
    CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire_bytes(NULL, (const uint8_t *)id, 9, 1, 0, &retry),
                 SEAWALL_STATUS_NULL_ARGUMENT);
  }
  seawall_keyed_rate_limiter_free(k);
}

static void caller_memory(void) {
  seawall_rate_limiter_config cfg = ten_per_second();
  seawall_rate_limiter *a = NULL, *b = NULL;
  seawall_keyed_rate_limiter *ka = NULL, *kb = NULL;
  const size_t len = 4096, klen = 40000;
  unsigned char *mem = aligned_zeroed(len), *kmem = aligned_zeroed(klen);
  uint64_t retry;
  bool created = true;
  uint32_t sa, sb;

  CHECK(seawall_rate_limiter_size() <= len);
  CHECK_U64(seawall_rate_limiter_align(), 128);
  CHECK(seawall_keyed_rate_limiter_size() <= klen);
  CHECK(seawall_keyed_rate_limiter_size() >= 4096 * 8);
  CHECK_STATUS(seawall_rate_limiter_attach(mem, len, &b), SEAWALL_STATUS_NOT_A_REGION);
  CHECK_STATUS(seawall_rate_limiter_init_in(mem, 64, &cfg, &a), SEAWALL_STATUS_BAD_REGION);
  CHECK_STATUS(seawall_rate_limiter_init_in(mem + 8, len - 8, &cfg, &a),
               SEAWALL_STATUS_BAD_REGION);
  CHECK_STATUS(seawall_rate_limiter_init_in(mem, len, &cfg, &a), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_rate_limiter_attach(mem, len, &b), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_rate_limiter_created(b, &created), SEAWALL_STATUS_OK);
  CHECK(!created);
  CHECK_STATUS(seawall_rate_limiter_try_acquire(a, 3, 0, &retry), SEAWALL_STATUS_OK);
  /* At 50 ms through the other handle: next 400, 400 - 100 - 50 = 250: 50 ms. */
  CHECK_STATUS(seawall_rate_limiter_try_acquire(b, 1, 50 * MS, &retry), SEAWALL_STATUS_REJECTED);
  CHECK_U64(retry, 50 * MS);
  /* A keyed attach to a single limiter's memory is another structure. */
  CHECK_STATUS(seawall_keyed_rate_limiter_attach(mem, len, &kb),
               SEAWALL_STATUS_CONFIG_MISMATCH);
  seawall_rate_limiter_free(b);
  seawall_rate_limiter_free(a);

  CHECK_STATUS(seawall_keyed_rate_limiter_init_in(kmem, klen, &cfg, &ka),
               SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_keyed_rate_limiter_attach(kmem, klen, &kb), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_keyed_rate_limiter_slot_of(ka, 42, &sa), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_keyed_rate_limiter_slot_of(kb, 42, &sb), SEAWALL_STATUS_OK);
  CHECK_U64(sa, sb); /* one seed, the creator's */
  CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire(ka, 42, 3, 0, &retry), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_keyed_rate_limiter_try_acquire(kb, 42, 1, 0, &retry),
               SEAWALL_STATUS_REJECTED);
  CHECK_U64(retry, 100 * MS);
  seawall_keyed_rate_limiter_free(kb);
  seawall_keyed_rate_limiter_free(ka);
  free(kmem);
  free(mem);
}

/* One limiter in /dev/shm for two processes: the child takes two cells, the
 * parent then has one left of the burst of 3. */
static void shared_between_processes(void) {
  char name[64];
  seawall_rate_limiter_config cfg = ten_per_second(), other = cfg;
  seawall_rate_limiter *l = NULL, *m = NULL;
  uint64_t retry;
  bool created = false;
  int status = -1;
  pid_t child;

  snprintf(name, sizeof name, "c-rate-%ld", (long)getpid());
  CHECK_STATUS(seawall_rate_limiter_unlink_shared(name), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_rate_limiter_open_shared(name, &cfg, &l), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_rate_limiter_created(l, &created), SEAWALL_STATUS_OK);
  CHECK(created);
  fflush(NULL);
  child = fork();
  if (child == 0) {
    seawall_rate_limiter *c = NULL;
    int ok = seawall_rate_limiter_open_shared(name, &cfg, &c) == SEAWALL_STATUS_OK &&
             seawall_rate_limiter_try_acquire(c, 2, 0, NULL) == SEAWALL_STATUS_OK;
    seawall_rate_limiter_free(c);
    _exit(ok ? 0 : 1);
  }
  CHECK(child > 0);
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 1, 0, &retry), SEAWALL_STATUS_OK);
  CHECK_STATUS(seawall_rate_limiter_try_acquire(l, 1, 0, &retry), SEAWALL_STATUS_REJECTED);
  CHECK_U64(retry, 100 * MS);
  other.burst = 4;
  CHECK_STATUS(seawall_rate_limiter_open_shared(name, &other, &m), SEAWALL_STATUS_CONFIG_MISMATCH);
  CHECK(m == NULL);
  CHECK_STATUS(seawall_rate_limiter_open_shared("bad/name", &cfg, &m),
               SEAWALL_STATUS_INVALID_ARGUMENT);
  seawall_rate_limiter_free(l);
  CHECK_STATUS(seawall_rate_limiter_unlink_shared(name), SEAWALL_STATUS_OK);
}

int main(void) {
  defaults();
  by_hand();
  invalid_configs();
  null_arguments();
  keyed();
  if (seawall_shared_supported()) {
    caller_memory();
    shared_between_processes();
  }
  return report("rate_limiter");
}
