/* spank_bind.c - spank/bind.c as fuzz_spank builds it: setting the CPU
 * affinity goes to the stand-in (the fuzzer itself is never bound), and the
 * node's plan, which lives as long as slurmstepd, is released after each
 * input so that leaks show. */
#define sched_setaffinity standin_sched_setaffinity
#include "spank/bind.c"

#include "tests/fuzz/spank_standin.h"

void standin_bind_release (uint32_t ntasks)
{
    /* (fill_task may have stopped half way: every slot allocated is freed) */
    for (uint32_t r = 0; node.task != NULL && r < ntasks; r++) {
        struct task_binding *tb = &node.task[r];
        free (tb->visible);
        free (tb->gpus);
        free (tb->cpus);
        free (tb->mems);
        if (tb->mask != NULL)
            CPU_FREE (tb->mask);
    }
    free (node.task);
    if (node.live.topo != NULL)
        dist_topo_destroy (&node.live);
    memset (&node, 0, sizeof (node));
}
