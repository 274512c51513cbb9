/* spank_failfast.c - spank/failfast.c as fuzz_spank builds it: the line for
 * the step's stderr goes to the stand-in and nothing sleeps, and the
 * once-per-slurmstepd "already reported" is forgotten after each input. */
#define write standin_stderr_write
#define usleep standin_usleep
#include "spank/failfast.c"

#include "tests/fuzz/spank_standin.h"

void standin_failfast_release (void)
{
    reported = false;
}
