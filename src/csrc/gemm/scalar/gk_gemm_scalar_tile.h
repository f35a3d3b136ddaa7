/* The scalar Gemm micro-kernel, written once for every accumulator type.  Include after
 * defining GK_T (the accumulator type), GK_PRODUCT(x, y) (its product: rounded once for
 * floats -- no FMA, the build uses -ffp-contract=off; wrapping for the unsigned integer
 * types) and MR, NR.  Defines `static void ukernel(...)`: acc[i][j] += a[k][i] * b[k][j]
 * for k ascending, then the MR x NR tile is written out. */
static void ukernel(int kc, const void *a_panel, const void *b_panel, void *tile)
{
    const GK_T *a = (const GK_T *)a_panel;
    const GK_T *b = (const GK_T *)b_panel;
    GK_T *t = (GK_T *)tile;
    GK_T acc[MR][NR] = {{0}};
    for (int k = 0; k < kc; k++)
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++)
                acc[i][j] += GK_PRODUCT(a[(ptrdiff_t)k * MR + i], b[(ptrdiff_t)k * NR + j]);
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++)
            t[i * NR + j] = acc[i][j];
}
