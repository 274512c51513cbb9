"""Many preemption decisions in a row: rank ASKER requests preemption before call AT;
every rank must answer False before AT and True from AT on. Prints the calls' cost in
windows of 500, and "rank R: first true at N"."""
import sys
import time

import dtshim

calls, asker, at = (int(a) for a in sys.argv[1:4])
dtshim.init()
rank = dtshim.rank()
first = None
t = time.perf_counter()
for i in range(calls):
    if rank == asker and i == at:
        dtshim.request_preempt()
    answer = dtshim.should_preempt()
    if answer and first is None:
        first = i
    assert answer == (i >= at), f"rank {rank}: call {i} answered {answer}"
    if rank == 0 and (i + 1) % 500 == 0:
        now = time.perf_counter()
        print(f"calls {i - 498}-{i + 1}: {(now - t) / 500 * 1e3:.2f} ms each", flush=True)
        t = now
print(f"rank {rank}: first true at {first}", flush=True)
dtshim.finalize()
