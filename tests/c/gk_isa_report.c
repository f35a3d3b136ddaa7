/* One line for the C scripts: the detected CPU features, the int8 family the dispatch
 * picks, and the families usable here.
 *     features=<f1,f2,...> active=<isa> usable=<isa1,isa2,...>
 * scripts/test_qemu_aarch64.sh and scripts/test_cross_builds.sh build it with the core. */
#include <stdio.h>

#include "gemmkit/gk_dispatch.h"

int main(void)
{
    const char *names[32];
    int n = gk_cpu_feature_names(names, 32);
    printf("features=");
    for (int i = 0; i < n; i++)
        printf("%s%s", i ? "," : "", names[i]);
    printf(" active=%s usable=", gk_active_isa());
    for (int i = 0, first = 1; i < gk_qgemm_kernel_count(); i++)
        if (gk_qgemm_kernel_usable(i)) {
            printf("%s%s", first ? "" : ",", gk_qgemm_kernel_at(i)->isa);
            first = 0;
        }
    printf("\n");
    return 0;
}
