/* Every usable int8 kernel family against the scalar oracle, bit for bit.
 *
 * Portable C (built natively by run_native.sh, cross-built for aarch64 + qemu): the
 * kernel files to link are chosen by the build script, the families are found through
 * the dispatch table.  For each family it runs a small reference driver (pack A, pack B,
 * one ukernel call per tile; also in depth blocks, with the partial-sum modes of
 * gk_qepi.part_mode), the small-M path and the tall route, on random and extreme data, odd
 * shapes, deep K (including int32 wrap-around), every epilogue kind and multiplier /
 * y_zp stride pattern, and strided / negative-stride / broadcast sources; then compares
 * the outputs, the guard bytes around them and the packed row/column sums with the
 * scalar family's.  Prints "N passed, N failed"; exits 1 on any failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmkit/gk_dispatch.h"
#include "gemmkit/gk_kernels.h"
#include "gk_test_util.h"

static int n_pass, n_fail;
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) { return (uint32_t)(gk_test_xorshift64(&rng) >> 11); }
static int rnd_in(int lo, int hi) { return lo + (int)(rnd() % (uint32_t)(hi - lo + 1)); }

/* A matrix rows x cols of bytes somewhere inside a buffer, with byte strides. */
typedef struct {
    uint8_t *buf;
    const uint8_t *p; /* element (0, 0) */
    ptrdiff_t rs, cs;
} mat8;

enum { LAY_ROW, LAY_COL, LAY_NEGROW, LAY_NEGCOL, LAY_STRIDED, LAY_BCASTROW, LAY_COUNT };
static const char *lay_name[] = {"row", "col", "negrow", "negcol", "strided", "bcastrow"};

/* fill: 0 random, 1 all `hi` (given as the transformed value's byte), 2 random extremes */
static mat8 make_mat(int rows, int cols, int lay, int fill, uint8_t v_a, uint8_t v_b)
{
    mat8 m;
    size_t n = (size_t)rows * cols * 3 + 64;
    m.buf = (uint8_t *)xmalloc(n);
    for (size_t i = 0; i < n; i++)
        m.buf[i] = fill == 0 ? (uint8_t)rnd() : fill == 1 ? v_a : ((rnd() & 1) ? v_a : v_b);
    uint8_t *base = m.buf + 32;
    switch (lay) {
    case LAY_ROW: m.rs = cols; m.cs = 1; m.p = base; break;
    case LAY_COL: m.rs = 1; m.cs = rows; m.p = base; break;
    case LAY_NEGROW: m.rs = -(ptrdiff_t)cols; m.cs = 1; m.p = base + (size_t)(rows - 1) * cols; break;
    case LAY_NEGCOL: m.rs = cols; m.cs = -1; m.p = base + cols - 1; break;
    case LAY_STRIDED: m.rs = (ptrdiff_t)cols * 3; m.cs = 3; m.p = base; break;
    default: m.rs = 0; m.cs = 1; m.p = base; break;
    }
    return m;
}

typedef struct {
    int kind, mult_pat, allzero_za;
    int32_t *za, *zb, *yzp;
    float *mult;
    ptrdiff_t mult_rs, mult_cs, yzp_rs, yzp_cs;
} epi_cfg;

/* Multiplier / y_zp layouts: (rs, cs) = (0,0) (0,1) (1,0) (N,1) and a column-major grid
 * (1, M), which no vector epilogue handles (the scalar fallback must). */
#define N_PAT 5
static void pat_strides(int pat, int M, int N, ptrdiff_t *rs, ptrdiff_t *cs)
{
    static const int r[N_PAT] = {0, 0, 1, -1, 1}, c[N_PAT] = {0, 1, 0, 1, -1};
    *rs = r[pat] == -1 ? N : r[pat];
    *cs = c[pat] == -1 ? M : c[pat];
}

static epi_cfg make_epi(int M, int N, int kind, int pat, int zmode)
{
    epi_cfg c;
    c.kind = kind;
    c.mult_pat = pat;
    c.allzero_za = zmode == 0;
    c.za = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)M);
    c.zb = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)N);
    for (int i = 0; i < M; i++)
        c.za[i] = zmode == 0 ? 0 : zmode == 1 ? rnd_in(0, 383) : zmode == 4 ? rnd_in(0, 255) : (int32_t)rnd();
    for (int j = 0; j < N; j++)
        c.zb[j] = zmode == 0 || zmode == 1 || zmode == 4 ? rnd_in(-255, 127) : (int32_t)rnd();
    if (zmode == 3) { /* one za, one zb: per-tensor zero points, the separable correction */
        const int wide = (int)(rnd() & 1);
        const int32_t a0 = wide ? (int32_t)rnd() : rnd_in(0, 383);
        const int32_t b0 = wide ? (int32_t)rnd() : rnd_in(-255, 127);
        for (int i = 0; i < M; i++)
            c.za[i] = a0;
        for (int j = 0; j < N; j++)
            c.zb[j] = b0;
    }
    size_t n = (size_t)M * N + 1;
    c.mult = (float *)xmalloc(sizeof(float) * n);
    c.yzp = (int32_t *)xmalloc(sizeof(int32_t) * n);
    int mstyle = rnd_in(0, 4);
    for (size_t i = 0; i < n; i++) {
        float f;
        switch (mstyle) {
        case 0: f = (float)(rnd() % 1000 + 1) * 1e-6f; break;   /* typical requant */
        case 1: f = (rnd() & 1) ? 0.5f : 0.25f; break;           /* exact ties: half-even */
        case 2: f = (rnd() & 1) ? 3.4028235e38f : -3.4028235e38f; break; /* clamp both ways */
        case 3: /* |Y * mult| up to about 2^55: across 2^51..2^53, where the SIMD epilogues'
                 * shifter (S = 1.5 * 2^52) no longer rounds exactly and must clamp instead */
            f = ldexpf(1.0f + (float)(rnd() % 1024) / 1024.0f, rnd_in(12, 24));
            f = (rnd() & 1) ? f : -f;
            break;
        default: f = (float)((int)(rnd() % 2001) - 1000) * 1e-4f; break;
        }
        c.mult[i] = f;
        c.yzp[i] = kind == GK_QOUT_U8 ? rnd_in(0, 255) : rnd_in(-128, 127);
    }
    pat_strides(pat, M, N, &c.mult_rs, &c.mult_cs);
    pat_strides(rnd_in(0, N_PAT - 1), M, N, &c.yzp_rs, &c.yzp_cs);
    return c;
}

static void free_epi(epi_cfg *c)
{
    free(c->za); free(c->zb); free(c->mult); free(c->yzp);
}

#define GUARD 3 /* extra columns right of the output and a row below it */

/* Reference driver: pack everything, one ukernel per tile, depth in blocks of kb (a
 * multiple of kstep; kb >= K: one block, part_mode NONE) as gk_qgemm_driver.c runs them:
 * each block packed at its own depth, its row / column sums added up, its partial sums
 * kept in y itself (in_y, int32 output only) or in a scratch whose origin (part_m0,
 * part_n0) is not (0, 0).  Writes y (ldy = N + GUARD), the whole depth's sums into
 * rowsum/colsum.  With one za over all rows and one zb over all columns it also gives
 * the kernels the separable correction (gk_qepi.row_corr / col_corr). */
static void run_packed(const gk_qgemm_kernel *kr, int M, int N, int K, mat8 *A, uint8_t ax,
                       mat8 *B, uint8_t bx, epi_cfg *c, void *y, int32_t *rowsum, int32_t *colsum,
                       int kb, int in_y)
{
    const int nblk = kb >= K ? 1 : (K + kb - 1) / kb, kbk = kb >= K ? K : kb;
    int kbp = (kbk + kr->kstep - 1) / kr->kstep * kr->kstep;
    int mp = (M + kr->mr - 1) / kr->mr * kr->mr, np = (N + kr->nr - 1) / kr->nr * kr->nr;
    size_t asz = (size_t)mp * kbp * kr->a_elem_bytes,
           bsz = (size_t)(np / kr->nr) * gk_qgemm_b_panel_stride(kr, (size_t)kbp);
    uint8_t *pa = (uint8_t *)xmalloc(asz + 64), *pb = (uint8_t *)xmalloc(bsz + 64);
    int32_t *rsb = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)M + 4);
    int32_t *csb = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)N + 4);
    int32_t *cc = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)N);
    int32_t *rc = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)M);
    int32_t *colc = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)N);
    int32_t *scratch = NULL;
    int separable = 1;
    for (int i = 1; i < M; i++)
        separable &= c->za[i] == c->za[0];
    for (int j = 1; j < N; j++)
        separable &= c->zb[j] == c->zb[0];
    gk_qepi e;
    memset(&e, 0, sizeof e); /* part_mode NONE, no separable correction */
    e.kind = c->kind; e.a_rowsum = rowsum; e.a_zp = c->za; e.b_zp = c->zb; e.b_colcorr = cc;
    e.mult = c->mult; e.mult_rs = c->mult_rs; e.mult_cs = c->mult_cs;
    e.y_zp = c->yzp; e.yzp_rs = c->yzp_rs; e.yzp_cs = c->yzp_cs;
    e.y = y; e.ldy = N + GUARD; e.k = K;
    e.y_stream = (int32_t)(rnd() & 1); /* half the time: an output the caches would not keep */
    if (separable) {
        e.row_corr = rc;
        e.col_corr = colc;
    }
    if (nblk > 1 && in_y && c->kind == GK_QOUT_I32) {
        e.part = (int32_t *)y;
        e.part_ld = N + GUARD;
    } else if (nblk > 1) {
        /* element (m, n) at scratch[m * ld + n], reached from an origin inside it; the
         * garbage fill checks that STORE overwrites */
        const int ld = N + 5, r0 = rnd_in(0, 7), c0 = rnd_in(0, 4);
        scratch = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)(M + 8) * ld);
        memset(scratch, 0xEE, sizeof(int32_t) * (size_t)(M + 8) * ld);
        e.part = scratch + (size_t)r0 * ld + c0;
        e.part_ld = ld;
        e.part_m0 = r0;
        e.part_n0 = c0;
    }
    for (int b = 0, pc = 0; b < nblk; b++, pc += kbk) {
        const int kcur = K - pc < kbk ? K - pc : kbk, last = b == nblk - 1;
        const int kcp = (kcur + kr->kstep - 1) / kr->kstep * kr->kstep;
        memset(pa, 0xA5, asz + 64); /* the packers must write every byte they own */
        memset(pb, 0x5A, bsz + 64);
        kr->pack_a(M, kcur, A->p + (ptrdiff_t)pc * A->cs, A->rs, A->cs, ax, pa, b ? rsb : rowsum);
        kr->pack_b(kcur, N, B->p + (ptrdiff_t)pc * B->rs, B->rs, B->cs, bx, pb, b ? csb : colsum);
        for (int i = 0; b && i < M; i++)
            rowsum[i] = (int32_t)((uint32_t)rowsum[i] + (uint32_t)rsb[i]);
        for (int j = 0; b && j < N; j++)
            colsum[j] = (int32_t)((uint32_t)colsum[j] + (uint32_t)csb[j]);
        if (last) {
            for (int j = 0; j < N; j++) {
                cc[j] = (int32_t)((uint32_t)colsum[j] - (uint32_t)K * (uint32_t)c->zb[j]);
                colc[j] = (int32_t)((uint32_t)c->za[0] * (uint32_t)cc[j]);
            }
            for (int i = 0; i < M; i++)
                rc[i] = (int32_t)((uint32_t)rowsum[i] * (uint32_t)c->zb[0]);
        }
        e.part_mode = nblk == 1 ? GK_QPART_NONE : b == 0 ? GK_QPART_STORE
                      : last ? GK_QPART_FINISH : GK_QPART_ACC;
        if (kr->begin) /* the driver's contract: begin/end around the ukernel calls (AMX) */
            kr->begin();
        if (kr->ucolumn && (rnd() & 1)) {
            /* the family's column of tiles, as the driver calls it (half the time: the
             * other half runs its micro-kernel tile by tile) */
            for (int n0 = 0; n0 < N; n0 += kr->nr)
                kr->ucolumn(M, N - n0 < kr->nr ? N - n0 : kr->nr, kcp, pa,
                            pb + (size_t)(n0 / kr->nr) * gk_qgemm_b_panel_stride(kr, (size_t)kcp), &e, 0, n0);
        } else
        for (int m0 = 0; m0 < M; m0 += kr->mr)
            for (int n0 = 0; n0 < N; n0 += kr->nr) {
                int mv = M - m0 < kr->mr ? M - m0 : kr->mr, nv = N - n0 < kr->nr ? N - n0 : kr->nr;
                kr->ukernel(mv, nv, kcp, pa + (size_t)m0 * kcp * kr->a_elem_bytes,
                            pb + (size_t)(n0 / kr->nr) * gk_qgemm_b_panel_stride(kr, (size_t)kcp),
                            &e, m0, n0);
            }
        if (kr->end)
            kr->end();
    }
    free(pa); free(pb); free(rsb); free(csb); free(cc); free(rc); free(colc); free(scratch);
}

static void run_smallm(const gk_qgemm_kernel *kr, int M, int N, int K, mat8 *A, uint8_t ax,
                       mat8 *B, uint8_t bx, epi_cfg *c, void *y)
{
    int32_t *rowsum = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)M);
    for (int i = 0; i < M; i++) {
        uint32_t s = 0;
        for (int k = 0; k < K; k++)
            s += (uint8_t)(A->p[i * A->rs + k * A->cs] ^ ax);
        rowsum[i] = (int32_t)s;
    }
    gk_qepi e;
    memset(&e, 0, sizeof e);
    e.kind = c->kind; e.a_rowsum = rowsum; e.a_zp = c->za; e.b_zp = c->zb; e.b_colcorr = NULL;
    e.mult = c->mult; e.mult_rs = c->mult_rs; e.mult_cs = c->mult_cs;
    e.y_zp = c->yzp; e.yzp_rs = c->yzp_rs; e.yzp_cs = c->yzp_cs;
    e.y = y; e.ldy = N + GUARD; e.k = K;
    kr->smallm(M, N, K, A->p, A->rs, A->cs, ax, B->p, B->rs, bx, &e);
    free(rowsum);
}

/* The family's tall route as the driver calls it (A's rows contiguous: a_cs == 1; it
 * packs B and forms the row sums it needs itself).  Returns its status (0: done). */
static int run_tall(const gk_qgemm_kernel *kr, int M, int N, int K, mat8 *A, uint8_t ax,
                    mat8 *B, uint8_t bx, epi_cfg *c, void *y)
{
    int32_t *rowsum = (int32_t *)xmalloc(sizeof(int32_t) * (size_t)M + 4);
    memset(rowsum, 0xEE, sizeof(int32_t) * (size_t)M + 4); /* the route fills what it reads */
    gk_qepi e;
    memset(&e, 0, sizeof e);
    e.kind = c->kind; e.a_zp = c->za; e.b_zp = c->zb;
    e.mult = c->mult; e.mult_rs = c->mult_rs; e.mult_cs = c->mult_cs;
    e.y_zp = c->yzp; e.yzp_rs = c->yzp_rs; e.yzp_cs = c->yzp_cs;
    e.y = y; e.ldy = N + GUARD; e.k = K;
    e.y_stream = (int32_t)(rnd() & 1);
    int rc = kr->tall(M, N, K, A->p, A->rs, ax, B->p, B->rs, B->cs, bx, rowsum, &e);
    free(rowsum);
    return rc;
}

static const gk_qgemm_kernel *scalar_kernel;

static void check(const char *isa, const char *what, int ok, int M, int N, int K, int la, int lb,
                  epi_cfg *c, uint8_t ax, uint8_t bx)
{
    if (ok) {
        n_pass++;
        return;
    }
    n_fail++;
    if (n_fail <= 40)
        fprintf(stderr, "FAIL %s %s M=%d N=%d K=%d A=%s B=%s kind=%d multpat=%d yzp=(%td,%td) "
                "ax=%02x bx=%02x za0=%d\n", isa, what, M, N, K, lay_name[la], lay_name[lb],
                c->kind, c->mult_pat, c->yzp_rs, c->yzp_cs, ax, bx, c->allzero_za);
}

/* One problem on one family: packed path always, small-M path when it applies. */
static int force_kb; /* > 0: one_case's depth blocks are this deep instead of random */

static void one_case(const gk_qgemm_kernel *kr, int M, int N, int K, int la, int lb, int fill,
                     uint8_t ax, uint8_t bx, int kind, int pat, int zmode)
{
    /* the transformed extremes: a' = 255, b' = -128 (and 0 / 127 for mixes) */
    mat8 A = make_mat(M, K, la, fill, (uint8_t)(255 ^ ax), (uint8_t)(0 ^ ax));
    mat8 B = make_mat(K, N, lb, fill, (uint8_t)(0x80 ^ bx), (uint8_t)(0x7F ^ bx));
    epi_cfg c = make_epi(M, N, kind, pat, zmode);
    size_t es = kind == GK_QOUT_I32 ? 4 : 1;
    size_t ysz = (size_t)(M + 1) * (N + GUARD) * es;
    uint8_t *y0 = (uint8_t *)xmalloc(ysz), *y1 = (uint8_t *)xmalloc(ysz);
    int32_t *rs0 = (int32_t *)xmalloc(4 * (size_t)M + 4), *rs1 = (int32_t *)xmalloc(4 * (size_t)M + 4);
    int32_t *cs0 = (int32_t *)xmalloc(4 * (size_t)N + 4), *cs1 = (int32_t *)xmalloc(4 * (size_t)N + 4);
    memset(y0, 0xCD, ysz);
    run_packed(scalar_kernel, M, N, K, &A, ax, &B, bx, &c, y0, rs0, cs0, K, 0);
    if (kr != scalar_kernel) {
        memset(y1, 0xCD, ysz);
        run_packed(kr, M, N, K, &A, ax, &B, bx, &c, y1, rs1, cs1, K, 0);
        check(kr->isa, "packed", memcmp(y0, y1, ysz) == 0, M, N, K, la, lb, &c, ax, bx);
        check(kr->isa, "rowsum", memcmp(rs0, rs1, 4 * (size_t)M) == 0, M, N, K, la, lb, &c, ax, bx);
        check(kr->isa, "colsum", memcmp(cs0, cs1, 4 * (size_t)N) == 0, M, N, K, la, lb, &c, ax, bx);
    }
    if (K > kr->kstep) {
        /* depth blocks (at most ~64 of them), every family the oracle included */
        int kb = force_kb > 0 ? force_kb : rnd_in(K / 64 > 1 ? K / 64 : 1, K - 1);
        kb = (kb + kr->kstep - 1) / kr->kstep * kr->kstep;
        if (kb < K) {
            int in_y = (int)(rnd() & 1);
            memset(y1, 0xCD, ysz);
            run_packed(kr, M, N, K, &A, ax, &B, bx, &c, y1, rs1, cs1, kb, in_y);
            check(kr->isa, in_y ? "kblocks-y" : "kblocks", memcmp(y0, y1, ysz) == 0, M, N, K,
                  la, lb, &c, ax, bx);
            check(kr->isa, "kblocks-rowsum", memcmp(rs0, rs1, 4 * (size_t)M) == 0, M, N, K, la,
                  lb, &c, ax, bx);
            check(kr->isa, "kblocks-colsum", memcmp(cs0, cs1, 4 * (size_t)N) == 0, M, N, K, la,
                  lb, &c, ax, bx);
        }
    }
    if (kr->tall && A.cs == 1) {
        memset(y1, 0xCD, ysz);
        check(kr->isa, "tall", run_tall(kr, M, N, K, &A, ax, &B, bx, &c, y1) == 0 &&
                                   memcmp(y0, y1, ysz) == 0, M, N, K, la, lb, &c, ax, bx);
    }
    if (kr->smallm && B.cs == 1 && gk_qgemm_smallm_rows_ok(kr, M, K, N)) {
        memset(y1, 0xCD, ysz);
        run_smallm(kr, M, N, K, &A, ax, &B, bx, &c, y1);
        check(kr->isa, "smallm", memcmp(y0, y1, ysz) == 0, M, N, K, la, lb, &c, ax, bx);
    }
    free(A.buf); free(B.buf); free(y0); free(y1); free(rs0); free(rs1); free(cs0); free(cs1);
    free_epi(&c);
}

static const int dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                           31, 32, 33, 63, 64, 65, 127, 128, 129, 97, 251};
#define NDIMS ((int)(sizeof(dims) / sizeof(dims[0])))
static const int ks[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 129, 257};
#define NKS ((int)(sizeof(ks) / sizeof(ks[0])))

static void test_family(const gk_qgemm_kernel *kr)
{
    int before = n_fail;
    /* every M x N pair of the edge list, K / layouts / epilogue drawn at random */
    for (int a = 0; a < NDIMS; a++)
        for (int b = 0; b < NDIMS; b++) {
            int M = dims[a], N = dims[b];
            if (M > 64 && N > 64 && (a + b) % 3)
                continue; /* keep the big x big corner sparse: time */
            int K = ks[rnd_in(0, NKS - 1)];
            one_case(kr, M, N, K, rnd_in(0, LAY_COUNT - 1), rnd_in(0, LAY_COUNT - 2), 0,
                     (rnd() & 1) ? 0x80 : 0, (rnd() & 1) ? 0x80 : 0, rnd_in(0, 2),
                     rnd_in(0, N_PAT - 1), rnd_in(0, 3));
        }
    /* every K near the k-step and every layout pair, small M (small-M path) and large */
    for (int ki = 0; ki < NKS; ki++)
        for (int la = 0; la < LAY_COUNT; la++)
            for (int lb = 0; lb < LAY_COUNT - 1; lb++) {
                int M = (la + lb) % 2 ? rnd_in(1, 17) : rnd_in(9, 40);
                one_case(kr, M, rnd_in(1, 70), ks[ki], la, lb, rnd_in(0, 2),
                         (rnd() & 1) ? 0x80 : 0, (rnd() & 1) ? 0x80 : 0, rnd_in(0, 2),
                         rnd_in(0, N_PAT - 1), rnd_in(0, 3));
            }
    /* every epilogue kind x pattern x zero-point mode */
    for (int kind = 0; kind < 3; kind++)
        for (int pat = 0; pat < N_PAT; pat++)
            for (int z = 0; z < 4; z++) {
                one_case(kr, rnd_in(1, 8), rnd_in(1, 130), rnd_in(1, 300), LAY_ROW, LAY_ROW, 0,
                         0, 0x80, kind, pat, z);
                one_case(kr, rnd_in(9, 70), rnd_in(1, 130), rnd_in(1, 300), LAY_COL, LAY_ROW, 2,
                         0x80, 0, kind, pat, z);
            }
    /* extremes: all a' = 255 x all b' = -128, deep K, xor both ways */
    for (int x = 0; x < 4; x++) {
        uint8_t ax = (x & 1) ? 0x80 : 0, bx = (x & 2) ? 0x80 : 0;
        one_case(kr, 33, 65, 4096, LAY_ROW, LAY_ROW, 1, ax, bx, GK_QOUT_I32, 0, 2);
        one_case(kr, 8, 129, 4099, LAY_ROW, LAY_ROW, 1, ax, bx, GK_QOUT_I32, 0, 1);
        one_case(kr, 17, 31, 4096, LAY_COL, LAY_COL, 1, ax, bx, GK_QOUT_S8, 1, 1);
        one_case(kr, 5, 70, 4097, LAY_NEGROW, LAY_NEGROW, 2, ax, bx, GK_QOUT_U8, 3, 2);
    }
    /* int32 wrap: K = 40000 (corrections wrap) and 70000 (the dot product itself wraps) */
    one_case(kr, 9, 33, 40000, LAY_ROW, LAY_ROW, 1, 0, 0, GK_QOUT_I32, 0, 2);
    one_case(kr, 3, 17, 40001, LAY_ROW, LAY_ROW, 1, 0x80, 0x80, GK_QOUT_I32, 0, 1);
    one_case(kr, 17, 17, 70000, LAY_ROW, LAY_COL, 1, 0, 0, GK_QOUT_I32, 0, 2);
    one_case(kr, 2, 65, 70003, LAY_ROW, LAY_ROW, 1, 0, 0x80, GK_QOUT_I32, 0, 1);
    one_case(kr, 7, 40, 40000, LAY_STRIDED, LAY_ROW, 2, 0x80, 0, GK_QOUT_U8, 2, 2);
    one_case(kr, 40, 70, 40000, LAY_ROW, LAY_ROW, 1, 0x80, 0x80, GK_QOUT_I32, 0, 3);
    one_case(kr, 33, 64, 70001, LAY_ROW, LAY_ROW, 1, 0, 0x80, GK_QOUT_U8, 1, 3);
    /* whole tiles of every family (and edges) at depths the driver blocks: the vector
     * partial-sum paths of every mode, every epilogue kind, both correction forms */
    for (int kind = 0; kind < 3; kind++)
        for (int z = 0; z < 4; z++)
            one_case(kr, rnd_in(0, 1) ? 64 : 65, rnd_in(0, 1) ? 96 : 97, rnd_in(600, 2100),
                     LAY_ROW, LAY_ROW, rnd_in(0, 2), (rnd() & 1) ? 0x80 : 0,
                     (rnd() & 1) ? 0x80 : 0, kind, rnd_in(0, N_PAT - 1), z);
    /* columns of at least two whole tiles deeper than a sub-block (AMX: 1024): the
     * pipelined epilogue and the sub-block sums, one depth block (NONE) and a finishing
     * one 1280 deep after a first of 1280 (FINISH), every kind and correction form */
    for (int kind = 0; kind < 3; kind++)
        for (int z = 0; z < 4; z++) {
            force_kb = 1280;
            one_case(kr, z % 2 ? 64 : 97, z < 2 ? 64 : 65, kind == 1 ? rnd_in(2049, 2560) : rnd_in(1025, 2300),
                     LAY_ROW, LAY_ROW, rnd_in(0, 2), (rnd() & 1) ? 0x80 : 0, (rnd() & 1) ? 0x80 : 0,
                     kind, rnd_in(0, N_PAT - 1), z);
            force_kb = 0;
        }
    /* ... and of at least 12 whole tiles (AMX runs the epilogue inside the next tile's
     * k-loop there), one depth block and a finishing one */
    for (int kind = 0; kind < 3; kind++) {
        force_kb = 1280;
        one_case(kr, kind == 0 ? 384 : 390, 33, kind == 1 ? rnd_in(1281, 2560) : rnd_in(700, 1280), LAY_ROW,
                 LAY_ROW, rnd_in(0, 2), (rnd() & 1) ? 0x80 : 0, (rnd() & 1) ? 0x80 : 0, kind,
                 rnd_in(0, N_PAT - 1), rnd_in(0, 3));
        force_kb = 0;
    }
    /* small M (every size up to the largest smallm_max, 16, and one past) with wide N:
     * several stack chunks of column accumulators */
    for (int m = 1; m <= 17; m++)
        one_case(kr, m, rnd_in(4000, 9000), rnd_in(20, 70), LAY_ROW, LAY_ROW, 0,
                 (rnd() & 1) ? 0x80 : 0, (rnd() & 1) ? 0x80 : 0, rnd_in(0, 2), rnd_in(0, N_PAT - 1),
                 rnd_in(0, 3));
    /* one row with B's row stride a multiple of 4 KB: the pair families' 8-row passes
     * (gk_smp_pass_kc), depth tails inside a pass, B upside down and strided */
    for (int z = 0; z < 4; z++) {
        one_case(kr, 1, 4096, rnd_in(9, 70), LAY_ROW, z & 1 ? LAY_NEGROW : LAY_ROW, rnd_in(0, 2),
                 (rnd() & 1) ? 0x80 : 0, (rnd() & 1) ? 0x80 : 0, rnd_in(0, 2), rnd_in(0, N_PAT - 1), z);
        one_case(kr, 1, z < 2 ? 8192 : 4096, rnd_in(9, 40), LAY_STRIDED, z < 2 ? LAY_ROW : LAY_STRIDED,
                 rnd_in(0, 2), (rnd() & 1) ? 0x80 : 0, (rnd() & 1) ? 0x80 : 0, rnd_in(0, 2),
                 rnd_in(0, N_PAT - 1), z);
    }
    /* one row, A's zero point 0 (no column-sum row) and B's row stride a multiple of 4 KB,
     * for both B signs: the vpdpbusd families sweep each 16-row pass as two 8-row halves
     * (gk_smq_pass_reg), without the xor for an int8 B */
    for (int z = 0; z < 6; z++)
        one_case(kr, 1, z < 3 ? 4096 : 8192, z % 3 == 0 ? 16 : z % 3 == 1 ? 37 : 64, LAY_ROW,
                 z % 2 ? LAY_NEGROW : LAY_ROW, rnd_in(0, 2), (rnd() & 1) ? 0x80 : 0,
                 z % 2 ? 0x80 : 0, rnd_in(0, 2), rnd_in(0, N_PAT - 1), 0);
    /* 9..16 rows with B's row stride a multiple of 2 KB: the pair families run the rows in
     * groups of at most 8, each with its rows' epilogue (gk_qepi_rows_from): per-row
     * multipliers / zero points, every output kind, A gathered or strided, B upside down */
    for (int m = 9; m <= 16; m++)
        one_case(kr, m, m % 2 ? 2048 : 4096, rnd_in(9, 40), m % 3 == 0 ? LAY_ROW : m % 3 == 1 ? LAY_COL : LAY_STRIDED,
                 m % 4 < 2 ? LAY_ROW : LAY_NEGROW, rnd_in(0, 2), (rnd() & 1) ? 0x80 : 0,
                 (rnd() & 1) ? 0x80 : 0, m % 3, rnd_in(0, N_PAT - 1), m % 4);
    /* per-row zero points all in [0, 255] (as the driver's always are): the pair families
     * fold them into A instead of a column-sum row (gk_smp_fold_ok), every row count,
     * both B signs, every output kind, depth tails; za up to 383 above keeps the other */
    for (int m = 1; m <= 17; m++)
        one_case(kr, m, rnd_in(60, 300), rnd_in(1, 90), m % 2 ? LAY_ROW : LAY_COL, LAY_ROW, rnd_in(0, 2),
                 (rnd() & 1) ? 0x80 : 0, (rnd() & 1) ? 0x80 : 0, m % 3, rnd_in(0, N_PAT - 1), 4);
    one_case(kr, 3, 40, 70003, LAY_ROW, LAY_ROW, 1, 0, 0x80, GK_QOUT_I32, 0, 4); /* wraps */
    /* the small-M accumulator chunk (gk_x86_smallm_accbuf: 384 KB of int32 rows) ends
     * inside N: 1 row + column sums = 49152 columns, 16 + 1 rows = 5760 columns */
    for (int z = 1; z <= 2; z++) {
        one_case(kr, 1, 49152 + 70, 37, LAY_ROW, LAY_ROW, 0, 0, 0x80, GK_QOUT_I32, 0, z);
        one_case(kr, 16, 5760 + 33, 21, LAY_ROW, LAY_ROW, 0, 0x80, 0, GK_QOUT_U8, 1, z);
    }
    /* the staged small-M path of the vpdpbusd families (gk_qsmallm_quad.inc: 10 or more
     * rows with the column-sum row, K * N >= 1 MiB): every row count, depth tails inside
     * a 128-row stage and inside a 16-row step, A gathered (a_cs != 1), B upside down,
     * a single column block (no next block to stage), every zero-point mode */
    for (int m = 9; m <= 33; m += m < 17 ? 1 : 5)
        one_case(kr, m, rnd_in(1030, 1200), rnd_in(1030, 1160), m % 3 == 0 ? LAY_ROW : m % 3 == 1 ? LAY_COL : LAY_STRIDED,
                 m % 2 ? LAY_ROW : LAY_NEGROW, rnd_in(0, 2), (rnd() & 1) ? 0x80 : 0,
                 (rnd() & 1) ? 0x80 : 0, rnd_in(0, 2), rnd_in(0, N_PAT - 1), m % 4);
    /* the amx family's tile route (gk_qsmallm_tiles.inc: 8 to 48 rows with the column-sum
     * row, K * N >= 1 MiB): chunks of 2048 columns ending inside N, stages of fewer than 64
     * depth rows and a last stage inside a 64-row step, three row tiles (32 rows + the
     * column sums), A gathered, B upside down */
    for (int z = 0; z < 4; z++) {
        one_case(kr, z < 2 ? 8 : 7, rnd_in(4100, 4300), rnd_in(257, 320), z % 2 ? LAY_COL : LAY_ROW,
                 z % 2 ? LAY_NEGROW : LAY_ROW, rnd_in(0, 2), (rnd() & 1) ? 0x80 : 0,
                 (rnd() & 1) ? 0x80 : 0, rnd_in(0, 2), rnd_in(0, N_PAT - 1), z);
        one_case(kr, 15 + z, rnd_in(20000, 30000), rnd_in(40, 63), LAY_ROW, LAY_ROW, rnd_in(0, 2),
                 (rnd() & 1) ? 0x80 : 0, (rnd() & 1) ? 0x80 : 0, rnd_in(0, 2), rnd_in(0, N_PAT - 1), z);
        one_case(kr, 32 - z, 2 * 2048 + rnd_in(1, 63), rnd_in(260, 300), z % 2 ? LAY_STRIDED : LAY_ROW,
                 LAY_ROW, rnd_in(0, 2), (rnd() & 1) ? 0x80 : 0, (rnd() & 1) ? 0x80 : 0, rnd_in(0, 2),
                 rnd_in(0, N_PAT - 1), z == 0 ? 1 : z);
    }
    one_case(kr, 17, 260, 4101, LAY_ROW, LAY_ROW, 1, 0x80, 0, GK_QOUT_I32, 0, 1);
    one_case(kr, 12, 20, 60003, LAY_ROW, LAY_ROW, 1, 0, 0x80, GK_QOUT_I32, 0, 2);
    printf("  %-12s mr=%d nr=%d kstep=%d smallm_max=%d: %s\n", kr->isa, kr->mr, kr->nr, kr->kstep,
           kr->smallm_max, n_fail == before ? "ok" : "FAILED");
}

int main(void)
{
    int nk = gk_qgemm_kernel_count();
    scalar_kernel = &gk_qgemm_u8s8_scalar;
    printf("int8 kernel families (%d compiled in):\n", nk);
    for (int i = 0; i < nk; i++) {
        const gk_qgemm_kernel *kr = gk_qgemm_kernel_at(i);
        if (!gk_qgemm_kernel_usable(i)) {
            printf("  %-12s not usable on this CPU: skipped\n", kr->isa);
            continue;
        }
        test_family(kr);
    }
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
