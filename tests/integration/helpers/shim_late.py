"""dtshim.barrier() from Python with a late rank: python3 shim_late.py VICTIM MS.
The victim sleeps MS ms before the barrier; every rank prints
"rank R: barrier returned S after T s; then S2" as shim_check's late mode does
(S: 0, or the DtshimError's status)."""
import sys
import time

import dtshim


def status(call):
    try:
        call()
        return 0
    except dtshim.DtshimError as e:
        return e.status


victim, ms = int(sys.argv[1]), int(sys.argv[2])
dtshim.init()
dtshim.barrier()
rank = dtshim.rank()
if rank == victim:
    time.sleep(ms / 1000)
t0 = time.monotonic()
rv = status(dtshim.barrier)
t = time.monotonic() - t0
then = status(dtshim.barrier)
print("rank %d: barrier returned %d after %.2f s; then %d" % (rank, rv, t, then), flush=True)
if rv == 0 and then == 0:
    dtshim.finalize()
elif rv != 0:
    # Stay until the late rank has come: over PMI-2 its fence completes the one this rank
    # left, and srun retries the answer for 15 s to a node whose tasks are all gone.
    time.sleep(max(0.0, ms / 1000 + 0.5 - (time.monotonic() - t0)))
