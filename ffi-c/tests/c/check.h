/* A few assertion macros for the C tests of seawall: every failed check prints
 * where and why and the test goes on; report() prints "NAME: N passed, N failed"
 * and gives the exit code. */
#ifndef SEAWALL_TEST_CHECK_H
#define SEAWALL_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "seawall.h"

/* Tell valgrind a buffer's bytes count as initialised (a test reading padding
 * on purpose); nothing where valgrind's header is absent or valgrind not
 * running. */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define SEAWALL_TEST_MAKE_DEFINED(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#endif
#endif
#ifndef SEAWALL_TEST_MAKE_DEFINED
#define SEAWALL_TEST_MAKE_DEFINED(p, n) ((void)(p), (void)(n))
#endif

static int checks_passed;
static int checks_failed;

#define FAILED_AT() (checks_failed++, fprintf(stderr, "%s:%d: ", __FILE__, __LINE__))

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (cond) {                                                        \
      checks_passed++;                                                 \
    } else {                                                           \
      FAILED_AT();                                                     \
      fprintf(stderr, "CHECK(%s) failed\n", #cond);                    \
    }                                                                  \
  } while (0)

/* The call returns the status `want` (a SEAWALL_STATUS_* constant). */
#define CHECK_STATUS(call, want)                                       \
  do {                                                                 \
    seawall_status got_ = (call);                                      \
    if (got_ == (want)) {                                              \
      checks_passed++;                                                 \
    } else {                                                           \
      FAILED_AT();                                                     \
      fprintf(stderr, "%s returned %s, expected %s (last error: %s)\n", \
              #call, seawall_status_name(got_), #want,                 \
              seawall_last_error_message());                           \
    }                                                                  \
  } while (0)

#define CHECK_U64(got, want)                                            \
  do {                                                                  \
    uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);               \
    if (g_ == w_) {                                                     \
      checks_passed++;                                                  \
    } else {                                                            \
      FAILED_AT();                                                      \
      fprintf(stderr, "%s is %" PRIu64 ", expected %s = %" PRIu64 "\n", \
              #got, g_, #want, w_);                                     \
    }                                                                   \
  } while (0)

/* The last error message on this thread equals `want` exactly. */
#define CHECK_MESSAGE(want)                                             \
  do {                                                                  \
    const char *m_ = seawall_last_error_message();                      \
    if (strcmp(m_, (want)) == 0) {                                      \
      checks_passed++;                                                  \
    } else {                                                            \
      FAILED_AT();                                                      \
      fprintf(stderr, "last error is \"%s\", expected \"%s\"\n", m_,    \
              (want));                                                  \
    }                                                                   \
  } while (0)

/* The last error message on this thread contains `part`. */
#define CHECK_MESSAGE_HAS(part)                                         \
  do {                                                                  \
    const char *m_ = seawall_last_error_message();                      \
    if (strstr(m_, (part)) != NULL) {                                   \
      checks_passed++;                                                  \
    } else {                                                            \
      FAILED_AT();                                                      \
      fprintf(stderr, "last error \"%s\" lacks \"%s\"\n", m_, (part));  \
    }                                                                   \
  } while (0)

static int report(const char *name) {
  printf("%s: %d passed, %d failed\n", name, checks_passed, checks_failed);
  return checks_failed == 0 && checks_passed > 0 ? 0 : 1;
}

#endif /* SEAWALL_TEST_CHECK_H */
