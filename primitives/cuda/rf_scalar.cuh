// The scalar operators of compute code on the device: rf_scalar_binary and
// rf_scalar_unary (common/rf_expr.c) bit for bit. Shared, as text, by the
// interpreter (kernels.cu) and the NVRTC-generated kernels (codegen.c embeds
// this file), so both backends' GPU paths agree by construction. It needs
// uint64_t & co., the RF_EX_* / RF_TYPE_* / RF_DERR_* constants, INT32_MIN/MAX
// and a struct RfErr {int code; int aux; uint64_t value;} from its includer.
// Compile with --fmad=false: a*b+c must not fuse.

// Where a kernel finds the string order and reports its first fault.
struct RfEnv {
    const uint32_t *rank;
    uint64_t nrank;
    RfErr *err;
};

__device__ __forceinline__ double as_f(uint64_t w) { return __longlong_as_double((long long)w); }
__device__ __forceinline__ uint64_t from_f(double d)
{
    if (d == 0.0)
        d = 0.0; // -0.0 -> +0.0
    return (uint64_t)__double_as_longlong(d);
}

__device__ __forceinline__ uint64_t wrap_int(int t, uint64_t v)
{
    if (t == RF_TYPE_INT32)
        return (uint64_t)(int64_t)(int32_t)(uint32_t)v;
    return v;
}

__device__ bool fail(RfErr *err, int code, uint64_t value, int aux)
{
    if (atomicCAS(&err->code, 0, code) == 0) {
        err->value = value;
        err->aux = aux;
    }
    return false;
}

__device__ __forceinline__ int str_rank_cmp(const RfEnv &p, uint64_t a, uint64_t b)
{
    uint64_t x = a < p.nrank ? p.rank[a] : a;
    uint64_t y = b < p.nrank ? p.rank[b] : b;
    return (x > y) - (x < y);
}

__device__ int value_compare(const RfEnv &p, int t, uint64_t a, uint64_t b)
{
    switch (t) {
    case RF_TYPE_INT32:
    case RF_TYPE_INT64: {
        int64_t x = (int64_t)a, y = (int64_t)b;
        return (x > y) - (x < y);
    }
    case RF_TYPE_FLOAT64: {
        double x = as_f(a), y = as_f(b);
        return (x > y) - (x < y);
    }
    case RF_TYPE_STRING:
        if (a == b)
            return 0;
        return str_rank_cmp(p, a, b);
    default:
        return (a > b) - (a < b);
    }
}

__device__ bool scalar_binary(const RfEnv &p, int op, int t, uint64_t a, uint64_t b,
                              uint64_t *out)
{
    if (op >= RF_EX_EQ && op <= RF_EX_GE) {
        int c = (op == RF_EX_EQ || op == RF_EX_NE) ? (a == b ? 0 : 1) : value_compare(p, t, a, b);
        bool r;
        switch (op) {
        case RF_EX_EQ: r = c == 0; break;
        case RF_EX_NE: r = c != 0; break;
        case RF_EX_LT: r = c < 0; break;
        case RF_EX_LE: r = c <= 0; break;
        case RF_EX_GT: r = c > 0; break;
        default: r = c >= 0; break;
        }
        *out = r;
        return true;
    }
    if (op == RF_EX_AND) { *out = (a && b); return true; }
    if (op == RF_EX_OR) { *out = (a || b); return true; }
    if (t == RF_TYPE_FLOAT64) {
        double x = as_f(a), y = as_f(b), r;
        switch (op) {
        case RF_EX_ADD: r = __dadd_rn(x, y); break;
        case RF_EX_SUB: r = __dsub_rn(x, y); break;
        case RF_EX_MUL: r = __dmul_rn(x, y); break;
        case RF_EX_DIV:
            if (y == 0.0)
                return fail(p.err, RF_DERR_DIV_ZERO, 0, 0);
            r = __ddiv_rn(x, y);
            break;
        case RF_EX_MOD:
            if (y == 0.0)
                return fail(p.err, RF_DERR_DIV_ZERO, 0, 0);
            r = fmod(x, y);
            break;
        default:
            return fail(p.err, RF_DERR_BAD_FLOAT_OP, 0, 0);
        }
        if (!isfinite(r))
            return fail(p.err, RF_DERR_FLOAT_OVERFLOW, 0, 0);
        *out = from_f(r);
        return true;
    }
    int64_t sx = (int64_t)a, sy = (int64_t)b;
    switch (op) {
    case RF_EX_ADD: *out = wrap_int(t, a + b); return true;
    case RF_EX_SUB: *out = wrap_int(t, a - b); return true;
    case RF_EX_MUL: *out = wrap_int(t, a * b); return true;
    case RF_EX_DIV:
    case RF_EX_MOD:
        if (sy == 0)
            return fail(p.err, RF_DERR_DIV_ZERO, 0, 0);
        if (sy == -1)
            *out = op == RF_EX_DIV ? wrap_int(t, 0 - a) : 0;
        else
            *out = wrap_int(t, (uint64_t)(op == RF_EX_DIV ? sx / sy : sx % sy));
        return true;
    default:
        return fail(p.err, RF_DERR_BAD_INT_OP, 0, 0);
    }
}

__device__ bool scalar_unary(const RfEnv &p, int op, int from, int to, uint64_t a,
                             uint64_t *out)
{
    switch (op) {
    case RF_EX_NOT:
        *out = !a;
        return true;
    case RF_EX_NEG:
        if (to == RF_TYPE_FLOAT64)
            *out = from_f(-as_f(a));
        else
            *out = wrap_int(to, 0 - a);
        return true;
    case RF_EX_CAST: {
        bool from_int = from == RF_TYPE_INT32 || from == RF_TYPE_INT64;
        bool to_int = to == RF_TYPE_INT32 || to == RF_TYPE_INT64;
        if (from == to || (from_int && to == RF_TYPE_INT64)) {
            *out = a;
            return true;
        }
        if (from_int && to == RF_TYPE_FLOAT64) {
            *out = from_f(__ll2double_rn((long long)a));
            return true;
        }
        if (from == RF_TYPE_INT64 && to == RF_TYPE_INT32) {
            int64_t v = (int64_t)a;
            if (v < INT32_MIN || v > INT32_MAX)
                return fail(p.err, RF_DERR_INT32_RANGE, a, 0);
            *out = a;
            return true;
        }
        if (from == RF_TYPE_FLOAT64 && to_int) {
            double d = trunc(as_f(a));
            double lo = to == RF_TYPE_INT32 ? (double)INT32_MIN : -9223372036854775808.0;
            double hi = to == RF_TYPE_INT32 ? (double)INT32_MAX : 9223372036854775807.0;
            if (!(d >= lo && d < hi + (to == RF_TYPE_INT32 ? 1.0 : 0.0)))
                return fail(p.err, RF_DERR_FLOAT_RANGE, a, to);
            *out = (uint64_t)(int64_t)d;
            return true;
        }
        return fail(p.err, RF_DERR_CONVERT, 0, from | to << 8);
    }
    default:
        return fail(p.err, RF_DERR_BAD_UNARY_OP, 0, 0);
    }
}

