# Every C declaration of gemmkit._core, in one place: Cython includes this file into
# _core.pyx (same module name), so the .pxi files share one set of types and constants.
# Each block names the contract header (include/gemmkit/) that defines it.
from libc.stddef cimport ptrdiff_t, size_t
from libc.stdint cimport uint8_t, uint16_t, int32_t, uint32_t, uint64_t


cdef extern from "numpy/arrayobject.h":  # (defines arrayscalars.h's types)
    ctypedef struct PyFloatScalarObject:  # np.float32 (NumPy's own; never an ml_dtypes one)
        float obval


cdef extern from "gemmkit/gk_codecs.h" nogil:
    enum gk_fp8_format:
        GK_F8E4M3FN
        GK_F8E4M3FNUZ
        GK_F8E5M2
        GK_F8E5M2FNUZ

    float gk_bf16_to_f32(uint16_t h)
    uint16_t gk_f32_to_bf16(float f)
    float gk_f16_to_f32(uint16_t h)
    uint16_t gk_f32_to_f16(float f)

    float gk_fp8_decode(uint8_t v, int fmt)
    uint8_t gk_fp8_encode_f32(float x, int fmt, int saturate)
    uint8_t gk_fp8_encode_f64(double x, int fmt, int saturate)
    void gk_fp8_decode_n(const uint8_t *src, float *dst, size_t n, int fmt)
    void gk_fp8_encode_f32_n(const float *src, uint8_t *dst, size_t n, int fmt, int saturate)
    void gk_fp8_encode_f64_n(const double *src, uint8_t *dst, size_t n, int fmt, int saturate)
    float gk_fp8_max_finite(int fmt)

    void gk_f16_to_f32_n(const uint16_t *src, float *dst, size_t n)
    void gk_f32_to_f16_n(const float *src, uint16_t *dst, size_t n)
    void gk_bf16_to_f32_n(const uint16_t *src, float *dst, size_t n)
    void gk_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n)
    int gk_f32_range(const float *src, size_t n, float *lo, float *hi)
    void gk_quantize_u8_n(const float *src, uint8_t *dst, size_t n, float scale, float zp)
    void gk_i32_scale_n(const int32_t *acc, float *dst, size_t n, size_t ncols,
                        const float *scale, int scale_per_col, const float *bias)
    ctypedef struct gk_codecs_kernel:
        const char *isa
        void (*f16_to_f32_n)(const uint16_t *src, float *dst, size_t n) nogil
        void (*f32_to_f16_n)(const float *src, uint16_t *dst, size_t n) nogil
        void (*bf16_to_f32_n)(const uint16_t *src, float *dst, size_t n) nogil
        void (*f32_to_bf16_n)(const float *src, uint16_t *dst, size_t n) nogil
        void (*fp8_to_f32_n)(const uint8_t *src, float *dst, size_t n, int fmt) nogil
        void (*f32_to_fp8_n)(const float *src, uint8_t *dst, size_t n, int fmt,
                             int saturate) nogil
    const gk_codecs_kernel gk_codecs_scalar

    enum gk_cast_type:
        GK_CT_F32
        GK_CT_F64
        GK_CT_F16
        GK_CT_BF16
        GK_CT_F8
    enum:
        GK_CAST_MAXD
    ctypedef struct gk_cast_args:
        int src_type, dst_type
        int saturate
        int ndim
        ptrdiff_t shape[GK_CAST_MAXD]
        ptrdiff_t src_stride[GK_CAST_MAXD]
        ptrdiff_t dst_stride[GK_CAST_MAXD]
        const void *src
        void *dst
    void gk_cast_run(const gk_codecs_kernel *kern, const gk_cast_args *args)
    uint32_t gk_f64_to_f32_bits(double x)
    uint16_t gk_f64_to_f16(double x)
    uint16_t gk_f64_to_bf16(double x)


cdef extern from "gemmkit/gk_qgemm.h" nogil:
    ctypedef struct gk_qgemm_kernel:
        const char *isa
        int mr, nr, kstep
        int a_elem_bytes, b_elem_bytes
        int smallm_max
        int smallm_wide_max
        int kc_deep
        void *ucolumn
        int slow_l3_block_div


cdef extern from "gemmkit/gk_qgemm_driver.h" nogil:
    enum:
        GK_QOUT_I32
        GK_QOUT_U8
        GK_QOUT_S8
    ctypedef struct gk_qgemm_problem:
        int m, n, k
        int a_type, b_type, y_type
        const uint8_t *a
        ptrdiff_t a_rs, a_cs
        int a_signed
        const uint8_t *b
        ptrdiff_t b_rs, b_cs
        int b_signed
        const uint8_t *a_zp
        ptrdiff_t a_zp_rs
        const uint8_t *b_zp
        ptrdiff_t b_zp_cs
        int32_t out_kind
        const float *a_scale
        ptrdiff_t as_rs
        const float *b_scale
        ptrdiff_t bs_cs
        const float *y_scale
        ptrdiff_t ys_rs, ys_cs
        const uint8_t *y_zp
        ptrdiff_t yzp_rs, yzp_cs
        void *y
        ptrdiff_t ldy
    enum:
        GK_QT_U8
        GK_QT_S8
        GK_QT_F8
    enum:
        GK_QBATCH_MAXD
        GK_QB_A
        GK_QB_B
        GK_QB_AZP
        GK_QB_BZP
        GK_QB_AS
        GK_QB_BS
        GK_QB_YS
        GK_QB_YZP
        GK_QB_Y
        GK_QB_NOPS
    ctypedef struct gk_qbatch:
        int ndim
        ptrdiff_t shape[GK_QBATCH_MAXD]
        ptrdiff_t stride[GK_QB_NOPS][GK_QBATCH_MAXD]
    enum:
        GK_QGEMM_KCHUNK
    int gk_qgemm_kc(const gk_qgemm_kernel *kern)
    int gk_qgemm_set_tall_mode(int mode)
    int gk_qgemm_set_slow_l3_mode(int mode)
    int gk_qlinear_f8_set_fma_mode(int mode)
    ctypedef struct gk_qgemm_blocking:
        int kcb, nblk, mc, nc, ms
    void gk_qgemm_blocking_of(const gk_qgemm_kernel *kern, int m, int n, int k, int may_deepen,
                              gk_qgemm_blocking *bl)
    size_t gk_qgemm_packed_b_size(const gk_qgemm_kernel *kern, int k, int n)
    int gk_qgemm_pack_b_whole(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p, void *mem)
    int gk_qgemm_run_packed(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                            const gk_qbatch *batch, const void *packed_b, ptrdiff_t nmat)
    int gk_qlinear_run_packed(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                              const gk_qbatch *batch, const void *packed_b, ptrdiff_t nmat)
    int gk_qgemm_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                     const gk_qbatch *batch)
    int gk_qlinear_run(const gk_qgemm_kernel *kern, const gk_qgemm_problem *p,
                       const gk_qbatch *batch)


cdef extern from "gemmkit/gk_gemm.h" nogil:
    enum:
        GK_DT_F16
        GK_DT_BF16
        GK_DT_F32
        GK_DT_F64
        GK_DT_I32
        GK_DT_U32
        GK_DT_I64
        GK_DT_U64
    enum:
        GK_GEMM_OK
        GK_GEMM_ENOMEM
    ctypedef struct gk_gemm_args:
        int dtype
        Py_ssize_t m, n, k
        const void *a
        Py_ssize_t a_rs, a_cs
        const void *b
        Py_ssize_t b_rs, b_cs
        const void *c
        Py_ssize_t c_rs, c_cs
        void *y
        Py_ssize_t ldy
        double alpha, beta
        uint64_t alpha_u64, beta_u64
        int alpha_exact, beta_exact
    int gk_gemm(const gk_gemm_args *args)
    ctypedef struct gk_gemm_kernel:
        const char *isa
        int dtype
        int acc
        int mr, nr
        int mc, kc, nc
        int cache_blocks
        int pack_esz
        int kc_sub
        int kc_thin
        int min_rows, min_depth
        Py_ssize_t min_macs
        void *check_packed
        int kc_thin_t
        int thin_t_tiles
        void *ukernel_rounded
    int gk_gemm_set_size_rules(int on)
    enum: GK_GEMM_THIN_T_KC
    size_t gk_gemm_set_memory_bytes(size_t nbytes)
    void gk_gemm_blocking(const gk_gemm_kernel *kern, int *mc, int *kc, int *nc)
    const gk_gemm_kernel *gk_gemm_kernel_for(int dtype)
    const gk_gemm_kernel *gk_gemm_kernel_after(const gk_gemm_kernel *kern)
    const gk_gemm_kernel *gk_gemm_thin_16bit_family(const gk_gemm_kernel *kern)
    int gk_gemm_run(const gk_gemm_kernel *kern, const gk_gemm_args *args)
    size_t gk_gemm_packed_b_size(const gk_gemm_kernel *kern, ptrdiff_t k, ptrdiff_t n)
    int gk_gemm_pack_b_whole(const gk_gemm_kernel *kern, const gk_gemm_args *args, void *mem)
    int gk_gemm_run_packed(const gk_gemm_kernel *kern, const gk_gemm_args *args,
                           const void *b_packed)
    const gk_gemm_kernel *const gk_gemm_wide_tile_families[]


cdef extern from "gemmkit/gk_dispatch.h" nogil:
    enum:
        GK_SELECT_OK
        GK_SELECT_UNKNOWN
        GK_SELECT_NOT_COMPILED
        GK_SELECT_UNSUPPORTED
    unsigned gk_cpu_features()
    int gk_cpu_feature_names(const char **names, int cap)
    ctypedef struct gk_cpu_cache_sizes:
        size_t l1d
        size_t l2
        size_t l3
        int l3_slow
    const gk_cpu_cache_sizes *gk_cpu_caches()
    int gk_cpu_avx_upper_in_use()
    int gk_isa_level_count()
    const char *gk_isa_level_name(int level)
    int gk_isa_level_compiled(int level)
    int gk_isa_level_usable(int level)
    int gk_select_isa(const char *name)
    int gk_selected_level()
    const gk_qgemm_kernel *gk_qgemm_active()
    const gk_codecs_kernel *gk_codecs_active()
    int gk_gemm_kernel_level(const gk_gemm_kernel *kern)
    int gk_codecs_kernel_count()


cdef extern from "gemmkit/gk_parallel.h" nogil:
    enum:
        GK_MAX_THREADS
    int gk_parallel_threads()
    void gk_parallel_set_threads(int n)
    int gk_parallel_get_threads()
    void gk_parallel_set_local(int n)
    int gk_parallel_get_local()
    int gk_parallel_pool_size()
    void gk_parallel_set_work_scale(double scale)
    double gk_parallel_work_scale()
    int gk_parallel_grid(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, int mr, int nr, double min_work,
                         int parts, int flags, int *tm, int *tn)
    void gk_parallel_set_tuning(int share_b, int parts_per_thread)
    int gk_parallel_share_b()
    int gk_parallel_parts_per_thread()


# The default floating-point environment around exactly defined computations (see the
# header): gemmkit.contrib's DynamicQuantizeLinear steps.
cdef extern from "core/gk_fenv.h" nogil:
    ctypedef struct fenv_t:
        pass
    const fenv_t *FE_DFL_ENV
    int gk_fenv_is_default()
    int fegetenv(fenv_t *envp)
    int fesetenv(const fenv_t *envp)
