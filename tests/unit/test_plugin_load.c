/* test_plugin_load.c - the built dist_train.so loads with every symbol
 * resolved against the Slurm it was built for.
 *
 * Slurm loads plugins lazily, so a symbol a release no longer has (24.11
 * removed slurm_get_errno) builds with a warning and kills slurmstepd the
 * first time the call runs.  RTLD_NOW resolves every symbol at once, here,
 * against libslurmfull (srun's and slurmstepd's own library, where the
 * spank_* calls live).  The plugin's version must be the headers' too:
 * Slurm refuses a plugin of another major.minor.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <slurm/slurm_version.h>

int main (void)
{
    const char *full = getenv ("SLURM_LIBFULL");
    const char *plugin = getenv ("PLUGIN_SO");
    const uint32_t *version;
    void *h;

    if (plugin == NULL || full == NULL || full[0] == '\0') {
        printf ("SKIP: no libslurmfull.so found by configure (PLUGIN_SO=%s)\n",
                plugin ? plugin : "(unset)");
        return 77;
    }
    if (dlopen (full, RTLD_NOW | RTLD_GLOBAL) == NULL) {
        printf ("FAIL: cannot load %s: %s\n", full, dlerror ());
        return 1;
    }
    if ((h = dlopen (plugin, RTLD_NOW | RTLD_LOCAL)) == NULL) {
        printf ("FAIL: %s does not load with RTLD_NOW: %s\n", plugin, dlerror ());
        return 1;
    }
    if ((version = dlsym (h, "plugin_version")) == NULL) {
        printf ("FAIL: %s has no plugin_version\n", plugin);
        return 1;
    }
    if (*version != SLURM_VERSION_NUMBER) {
        printf ("FAIL: plugin_version 0x%x, headers 0x%x\n", *version, SLURM_VERSION_NUMBER);
        return 1;
    }
    if ((dlsym (h, "slurm_spank_init_failure_mode") != NULL)
        != (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM (25, 5, 0))) {
        printf ("FAIL: slurm_spank_init_failure_mode is %s on Slurm 0x%x\n",
                dlsym (h, "slurm_spank_init_failure_mode") ? "exported" : "missing",
                SLURM_VERSION_NUMBER);
        return 1;
    }
    printf ("PASS: %s loads with every symbol resolved against %s (Slurm 0x%06x)\n", plugin, full,
            SLURM_VERSION_NUMBER);
    return 0;
}
