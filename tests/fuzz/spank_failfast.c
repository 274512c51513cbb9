/* spank_failfast.c - spank/failfast.c as fuzz_spank builds it: the line for
 * the step's stderr goes to the stand-in (whose stderr is a writable
 * character device, whatever the fuzzer's own fd 2 is) and nothing sleeps,
 * and the once-per-slurmstepd "already reported" is forgotten after each
 * input. */
#define write standin_stderr_write
#define usleep standin_usleep
#define fstat standin_stderr_fstat
#define poll standin_stderr_poll
#include "spank/failfast.c"

#include "tests/fuzz/spank_standin.h"

void standin_failfast_release (void)
{
    reported = false;
}
