#include "rf_value.h"
#include "rf_scalar_ops.h" /* calendar helpers */

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const type_names[RF_TYPE_COUNT_] = {
    "invalid", "int32", "int64", "float64", "bool", "string", "date",
    "decimal[0]", "decimal[1]", "decimal[2]", "decimal[3]", "decimal[4]", "decimal[5]", "decimal[6]",
    "decimal[7]", "decimal[8]", "decimal[9]", "decimal[10]", "decimal[11]", "decimal[12]",
    "decimal[13]", "decimal[14]", "decimal[15]", "decimal[16]", "decimal[17]", "decimal[18]",
};

const char *rf_type_name(rf_type t)
{
    return (t > RF_TYPE_INVALID && t < RF_TYPE_COUNT_) ? type_names[t] : "invalid";
}

rf_type rf_type_from_name(const char *name)
{
    for (int t = RF_TYPE_INT32; t < RF_TYPE_COUNT_; t++)
        if (strcmp(name, type_names[t]) == 0)
            return (rf_type)t;
    return RF_TYPE_INVALID;
}

bool rf_type_is_integer(rf_type t) { return t == RF_TYPE_INT32 || t == RF_TYPE_INT64; }
bool rf_type_is_numeric(rf_type t) { return rf_type_is_integer(t) || t == RF_TYPE_FLOAT64 || rf_type_is_decimal(t); }

rf_word rf_word_from_double(double d)
{
    if (d == 0.0)
        d = 0.0; /* -0.0 -> +0.0: equal values must be equal words */
    rf_word w;
    memcpy(&w, &d, sizeof w);
    return w;
}

double rf_word_to_double(rf_word w)
{
    double d;
    memcpy(&d, &w, sizeof d);
    return d;
}

int rf_value_compare(rf_type t, rf_word a, rf_word b)
{
    if (rf_type_is_signed_word(t)) {
        int64_t x = rf_word_to_int(a), y = rf_word_to_int(b);
        return (x > y) - (x < y);
    }
    switch (t) {
    case RF_TYPE_FLOAT64: {
        double x = rf_word_to_double(a), y = rf_word_to_double(b);
        return (x > y) - (x < y);
    }
    case RF_TYPE_STRING:
        if (a == b)
            return 0;
        {
            size_t la = rf_str_len(a), lb = rf_str_len(b);
            int c = memcmp(rf_str_get(a), rf_str_get(b), la < lb ? la : lb);
            if (c)
                return c < 0 ? -1 : 1;
            return (la > lb) - (la < lb);
        }
    default:
        return (a > b) - (a < b);
    }
}

bool rf_float64_parse(const char *text, size_t len, double *out, const char **why)
{
    char buf[128];
    size_t i = 0;
    if (i < len && (text[i] == '-' || text[i] == '+'))
        i++;
    size_t rest = len - i;
    if ((rest == 3 && (strncasecmp(text + i, "nan", 3) == 0 || strncasecmp(text + i, "inf", 3) == 0)) ||
        (rest == 8 && strncasecmp(text + i, "infinity", 8) == 0)) {
        *why = "not a finite number";
        return false;
    }
    if (rest >= 2 && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X')) {
        *why = "hex floats are not accepted";
        return false;
    }
    /* Decimal syntax; `nonzero` notes a nonzero digit in the mantissa. */
    size_t digits = 0;
    bool nonzero = false;
    for (; i < len && text[i] >= '0' && text[i] <= '9'; i++, digits++)
        nonzero |= text[i] != '0';
    if (i < len && text[i] == '.')
        for (i++; i < len && text[i] >= '0' && text[i] <= '9'; i++, digits++)
            nonzero |= text[i] != '0';
    if (digits && i < len && (text[i] == 'e' || text[i] == 'E')) {
        i++;
        if (i < len && (text[i] == '-' || text[i] == '+'))
            i++;
        size_t e0 = i;
        while (i < len && text[i] >= '0' && text[i] <= '9')
            i++;
        if (i == e0)
            digits = 0;
    }
    if (!digits || i != len) {
        *why = "not a number";
        return false;
    }
    if (len >= sizeof buf) {
        *why = "field too long for a number";
        return false;
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    double d = strtod(buf, NULL);
    if (!isfinite(d) || (d == 0 && nonzero)) {
        *why = "number out of range for float64";
        return false;
    }
    *out = d;
    return true;
}

bool rf_value_parse(rf_type t, const char *text, size_t len, rf_word *out, const char **why)
{
    char buf[128];
    if (t == RF_TYPE_STRING) {
        *out = rf_str_intern(text, len);
        return true;
    }
    /* Surrounding blanks are tolerated in numeric fields. */
    while (len && (*text == ' ' || *text == '\r')) { text++; len--; }
    while (len && (text[len - 1] == ' ' || text[len - 1] == '\r')) len--;
    if (len == 0) { *why = "empty field"; return false; }
    switch (t) {
    case RF_TYPE_INT32:
    case RF_TYPE_INT64: {
        if (len >= sizeof buf) { *why = "field too long for a number"; return false; }
        memcpy(buf, text, len);
        buf[len] = '\0';
        if (!(buf[0] == '-' || buf[0] == '+' || (buf[0] >= '0' && buf[0] <= '9'))) {
            *why = "not an integer";
            return false;
        }
        char *end = NULL;
        errno = 0;
        long long v = strtoll(buf, &end, 10);
        if (end != buf + len) { *why = "not an integer"; return false; }
        if (errno == ERANGE || (t == RF_TYPE_INT32 && (v < INT32_MIN || v > INT32_MAX))) {
            *why = t == RF_TYPE_INT32 ? "integer out of range for int32" : "integer out of range for int64";
            return false;
        }
        *out = rf_word_from_int(v);
        return true;
    }
    case RF_TYPE_FLOAT64: {
        double d;
        if (!rf_float64_parse(text, len, &d, why))
            return false;
        *out = rf_word_from_double(d);
        return true;
    }
    case RF_TYPE_DATE: {
        int64_t days;
        if (!rf_date_parse(text, len, &days, why))
            return false;
        *out = rf_word_from_int(days);
        return true;
    }
    case RF_TYPE_BOOL:
        /* As in program text: no 1/0, no other spelling. */
        if (len == 4 && memcmp(text, "true", 4) == 0) { *out = 1; return true; }
        if (len == 5 && memcmp(text, "false", 5) == 0) { *out = 0; return true; }
        *why = "not a bool (true/false)";
        return false;
    default:
        if (rf_type_is_decimal(t)) {
            int64_t v;
            if (!rf_decimal_parse(text, len, rf_decimal_scale(t), &v, why))
                return false;
            *out = rf_word_from_int(v);
            return true;
        }
        *why = "unsupported type";
        return false;
    }
}

bool rf_date_parse(const char *text, size_t len, int64_t *days, const char **why)
{
    static const int digit_at[] = {0, 1, 2, 3, 5, 6, 8, 9};
    if (len != 10 || text[4] != '-' || text[7] != '-') {
        *why = "not a date (YYYY-MM-DD)";
        return false;
    }
    for (size_t i = 0; i < sizeof digit_at / sizeof *digit_at; i++)
        if (text[digit_at[i]] < '0' || text[digit_at[i]] > '9') {
            *why = "not a date (YYYY-MM-DD)";
            return false;
        }
    int y = (text[0] - '0') * 1000 + (text[1] - '0') * 100 + (text[2] - '0') * 10 + (text[3] - '0');
    int m = (text[5] - '0') * 10 + (text[6] - '0');
    int d = (text[8] - '0') * 10 + (text[9] - '0');
    if (y < 1) {
        *why = "year out of range (0001..9999)";
        return false;
    }
    if (m < 1 || m > 12) {
        *why = "month out of range (01..12)";
        return false;
    }
    if (d < 1 || d > rf_cal_month_days(y, m)) {
        *why = "day out of range for its month";
        return false;
    }
    *days = rf_cal_days(y, m, d);
    return true;
}

/* "number out of range for decimal[N]" for N = 0..18. */
static const char *const g_decimal_range[RF_DECIMAL_MAX_SCALE + 1] = {
    "number out of range for decimal[0]", "number out of range for decimal[1]",
    "number out of range for decimal[2]", "number out of range for decimal[3]",
    "number out of range for decimal[4]", "number out of range for decimal[5]",
    "number out of range for decimal[6]", "number out of range for decimal[7]",
    "number out of range for decimal[8]", "number out of range for decimal[9]",
    "number out of range for decimal[10]", "number out of range for decimal[11]",
    "number out of range for decimal[12]", "number out of range for decimal[13]",
    "number out of range for decimal[14]", "number out of range for decimal[15]",
    "number out of range for decimal[16]", "number out of range for decimal[17]",
    "number out of range for decimal[18]",
};

/* "has more than N decimal places" for N = 0..18 (static strings). */
static const char *const g_too_many_places[RF_DECIMAL_MAX_SCALE + 1] = {
    "has more than 0 decimal places", "has more than 1 decimal place", "has more than 2 decimal places",
    "has more than 3 decimal places", "has more than 4 decimal places", "has more than 5 decimal places",
    "has more than 6 decimal places", "has more than 7 decimal places", "has more than 8 decimal places",
    "has more than 9 decimal places", "has more than 10 decimal places", "has more than 11 decimal places",
    "has more than 12 decimal places", "has more than 13 decimal places", "has more than 14 decimal places",
    "has more than 15 decimal places", "has more than 16 decimal places", "has more than 17 decimal places",
    "has more than 18 decimal places",
};

bool rf_decimal_parse(const char *text, size_t len, int scale, int64_t *out, const char **why)
{
    size_t i = 0;
    bool neg = false;
    if (i < len && text[i] == '-') {
        neg = true;
        i++;
    }
    size_t int0 = i;
    while (i < len && text[i] >= '0' && text[i] <= '9')
        i++;
    size_t nint = i - int0, frac0 = 0, nfrac = 0;
    if (i < len && text[i] == '.') {
        frac0 = ++i;
        while (i < len && text[i] >= '0' && text[i] <= '9')
            i++;
        nfrac = i - frac0;
        if (nfrac == 0)
            nint = 0; /* "5." */
    }
    if (nint == 0 || i != len) {
        *why = "not a decimal number (-digits.digits)";
        return false;
    }
    if ((int)nfrac > scale || nfrac > RF_DECIMAL_MAX_SCALE) {
        *why = g_too_many_places[scale];
        return false;
    }
    /* Magnitude in uint64: the digits, then the missing fraction digits. */
    const uint64_t limit = (uint64_t)INT64_MAX; /* |value| <= 2^63 - 1, both signs */
    uint64_t u = 0;
    bool over = false;
    for (size_t k = 0; k < nint + nfrac + (size_t)(scale - (int)nfrac); k++) {
        unsigned dgt = 0;
        if (k < nint)
            dgt = (unsigned)(text[int0 + k] - '0');
        else if (k < nint + nfrac)
            dgt = (unsigned)(text[frac0 + (k - nint)] - '0');
        if (u > (limit - dgt) / 10) {
            over = true;
            break;
        }
        u = u * 10 + dgt;
    }
    if (over) {
        *why = g_decimal_range[scale];
        return false;
    }
    *out = neg ? -(int64_t)u : (int64_t)u;
    return true;
}

int rf_decimal_format(int64_t v, int scale, char *buf, size_t cap)
{
    char tmp[48], *e = tmp + sizeof tmp, *p = e;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    for (int k = 0; k < scale; k++) {
        *--p = (char)('0' + u % 10);
        u /= 10;
    }
    if (scale > 0)
        *--p = '.';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    return snprintf(buf, cap, "%.*s", (int)(e - p), p);
}

int rf_date_format(int64_t days, char *buf, size_t cap)
{
    if (!rf_cal_in_range(days)) /* never a valid date word; printed so it shows */
        return snprintf(buf, cap, "date(%" PRId64 ")", days);
    int64_t y;
    int m, d;
    rf_cal_civil(days, &y, &m, &d);
    return snprintf(buf, cap, "%04d-%02d-%02d", (int)y, m, d);
}

/* Shortest %.Ng (N <= 17) of d that reads back as d. A decimal of at most
 * DBL_DIG (15) significant digits survives decimal -> double -> %.15g, so
 * for a normal d, %.15g (which drops trailing zeros) already is the
 * shortest when any form of <= 15 digits reads back; only 16 and 17 are
 * left to try. Subnormals carry fewer bits (5e-324 is one), so for them
 * every precision from 1 up is tried. */
static int format_double(double d, char *buf, size_t cap)
{
    char tmp[40];
    if (d == 0) /* also -0.0 */
        return snprintf(buf, cap, "0");
    for (int prec = fabs(d) < DBL_MIN ? 1 : DBL_DIG; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (prec == 17 || strtod(tmp, NULL) == d)
            break;
    }
    return snprintf(buf, cap, "%s", tmp);
}

size_t rf_str_escape(const char *s, size_t len, char *dst)
{
    char *d = dst;
    if (len == 0) {
        *d++ = '\\';
        *d++ = 'e';
        return 2;
    }
    if (s[0] == '#')
        *d++ = '\\';
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        switch (c) {
        case '\t': *d++ = '\\'; c = 't'; break;
        case '\n': *d++ = '\\'; c = 'n'; break;
        case '\r': *d++ = '\\'; c = 'r'; break;
        case '\\': *d++ = '\\'; break;
        default: break;
        }
        *d++ = c;
    }
    return (size_t)(d - dst);
}

bool rf_str_unescape(const char *s, size_t len, char *dst, size_t *outlen, size_t *bad)
{
    size_t n = 0;
    if (len == 2 && s[0] == '\\' && s[1] == 'e') {
        *outlen = 0;
        return true;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\\') {
            char e = i + 1 < len ? s[i + 1] : '\0';
            switch (e) {
            case 't': c = '\t'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case '\\': c = '\\'; break;
            case '#': c = '#'; break;
            default:
                *bad = i;
                return false;
            }
            i++;
        }
        dst[n++] = c;
    }
    *outlen = n;
    return true;
}

int rf_value_format(rf_type t, rf_word w, char *buf, size_t cap)
{
    switch (t) {
    case RF_TYPE_INT32:
    case RF_TYPE_INT64:
        return snprintf(buf, cap, "%" PRId64, rf_word_to_int(w));
    case RF_TYPE_FLOAT64:
        return format_double(rf_word_to_double(w), buf, cap);
    case RF_TYPE_BOOL:
        return snprintf(buf, cap, "%s", w ? "true" : "false");
    case RF_TYPE_DATE:
        return rf_date_format(rf_word_to_int(w), buf, cap);
    case RF_TYPE_STRING: {
        size_t len = rf_str_len(w);
        char small[256];
        char *tmp = RF_STR_ESCAPED_MAX(len) <= sizeof small ? small : rf_malloc(RF_STR_ESCAPED_MAX(len));
        size_t n = rf_str_escape(rf_str_get(w), len, tmp);
        if (cap) {
            size_t k = n < cap ? n : cap - 1;
            memcpy(buf, tmp, k);
            buf[k] = '\0';
        }
        if (tmp != small)
            free(tmp);
        return n > INT_MAX ? INT_MAX : (int)n;
    }
    default:
        if (rf_type_is_decimal(t))
            return rf_decimal_format(rf_word_to_int(w), rf_decimal_scale(t), buf, cap);
        return snprintf(buf, cap, "?");
    }
}

/* ---- String dictionary ----
 * Open addressing over ids; a slot holds the id + 1 in its low 32 bits and
 * the high 32 bits of the string's hash in its high bits, so that a probe
 * rarely touches an entry (a cache miss) or its text (another) that is not
 * the one sought. Texts live in an arena of large chunks, NUL-terminated,
 * and never move (rf_str_get's pointers stay valid): a malloc per string
 * was a good part of interning millions of distinct strings. */
typedef struct strentry {
    const char *text;
    size_t len;
    uint64_t hash;           /* growing the table rehashes without the text */
} strentry;

#define ARENA_CHUNK ((size_t)1 << 20)

static strentry *g_strs;
static size_t g_nstrs, g_capstrs;
static uint64_t g_print;   /* rf_str_fingerprint: a chain over the strings' hashes in id order */
static uint64_t *g_slots;      /* (hash >> 32) << 32 | (id + 1); 0 = empty */
static size_t g_nslots;
static char **g_chunks;        /* the arena */
static size_t g_nchunks, g_capchunks;
static char *g_free;           /* unused tail of the newest chunk */
static size_t g_free_len;

static uint64_t slot_of(uint64_t h, size_t id) { return (h >> 32 << 32) | ((uint64_t)id + 1); }

static void rehash(size_t nslots)
{
    free(g_slots);
    g_slots = rf_calloc(nslots, sizeof *g_slots);
    rf_hint_huge_pages(g_slots, nslots * sizeof *g_slots); /* probed at random */
    g_nslots = nslots;
    for (size_t id = 0; id < g_nstrs; id++) {
        uint64_t h = g_strs[id].hash;
        size_t i = h & (nslots - 1);
        while (g_slots[i])
            i = (i + 1) & (nslots - 1);
        g_slots[i] = slot_of(h, id);
    }
}

static char *new_chunk(size_t size)
{
    if (g_nchunks == g_capchunks) {
        g_capchunks = g_capchunks ? 2 * g_capchunks : 64;
        g_chunks = rf_realloc(g_chunks, rf_mul_size(g_capchunks, sizeof *g_chunks));
    }
    return g_chunks[g_nchunks++] = rf_malloc(size);
}

/* A NUL-terminated copy of s in the arena. */
static const char *arena_copy(const char *s, size_t len)
{
    char *d;
    if (len + 1 > ARENA_CHUNK / 4) {
        d = new_chunk(len + 1); /* a long string gets a chunk of its own */
    } else {
        if (len + 1 > g_free_len) {
            g_free = new_chunk(ARENA_CHUNK);
            g_free_len = ARENA_CHUNK;
        }
        d = g_free;
        g_free += len + 1;
        g_free_len -= len + 1;
    }
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

/* Lookup-only mode, per thread (rf_str_lookup_only). */
static _Thread_local bool tl_lookup_only, tl_missed;

void rf_str_lookup_only(bool on)
{
    tl_lookup_only = on;
    tl_missed = false;
}

bool rf_str_missed(void)
{
    bool m = tl_missed;
    tl_missed = false;
    return m;
}

/* The id of s, or -1 with *slot the empty slot where it would go. */
static int64_t find_string(const char *s, size_t len, uint64_t h, size_t *slot)
{
    uint64_t tag = h >> 32 << 32;
    size_t i = h & (g_nslots - 1);
    for (uint64_t sl; (sl = g_slots[i]) != 0; i = (i + 1) & (g_nslots - 1)) {
        if ((sl >> 32 << 32) != tag)
            continue;
        const strentry *e = &g_strs[(uint32_t)sl - 1];
        if (e->len == len && memcmp(e->text, s, len) == 0)
            return (int64_t)((uint32_t)sl - 1);
    }
    *slot = i;
    return -1;
}

rf_word rf_str_intern_hashed(const char *s, size_t len, uint64_t h)
{
    size_t i = 0;
    if (tl_lookup_only) {   /* read only: no rehash, no insert */
        int64_t id = g_nslots ? find_string(s, len, h, &i) : -1;
        tl_missed = tl_missed || id < 0;
        return id < 0 ? 0 : (rf_word)id;
    }
    if (2 * (g_nstrs + 1) > g_nslots)
        rehash(g_nslots ? 2 * g_nslots : 1024);
    int64_t id = find_string(s, len, h, &i);
    if (id >= 0)
        return (rf_word)id;
    if (g_nstrs == UINT32_MAX - 1)
        rf_out_of_memory(len);
    if (g_nstrs == g_capstrs) {
        g_capstrs = g_capstrs ? 2 * g_capstrs : 1024;
        g_strs = rf_realloc(g_strs, rf_mul_size(g_capstrs, sizeof *g_strs));
    }
    g_strs[g_nstrs] = (strentry){arena_copy(s, len), len, h};
    g_slots[i] = slot_of(h, g_nstrs);
    g_print = (g_print ^ h) * 0x9e3779b97f4a7c15ull + 1;
    return g_nstrs++;
}

rf_word rf_str_intern(const char *s, size_t len) { return rf_str_intern_hashed(s, len, rf_str_hash(s, len)); }

void rf_str_reserve(size_t more)
{
    size_t want = g_nstrs + more, nslots = g_nslots ? g_nslots : 1024;
    while (2 * (want + 1) > nslots)
        nslots *= 2;
    if (nslots != g_nslots)
        rehash(nslots);
    if (want > g_capstrs) {
        g_capstrs = want;
        g_strs = rf_realloc(g_strs, rf_mul_size(g_capstrs, sizeof *g_strs));
    }
}

void rf_str_prefetch(uint64_t h)
{
    if (g_nslots)
        __builtin_prefetch(&g_slots[h & (g_nslots - 1)]);
}

void rf_str_prefetch_entry(rf_word id)
{
    if (id < g_nstrs)
        __builtin_prefetch(&g_strs[id]);
}

void rf_str_prefetch_text(rf_word id)
{
    if (id < g_nstrs)
        __builtin_prefetch(g_strs[id].text);
}

const char *rf_str_get(rf_word id) { return id < g_nstrs ? g_strs[id].text : "<bad string id>"; }
size_t rf_str_len(rf_word id) { return id < g_nstrs ? g_strs[id].len : 0; }
size_t rf_str_count(void) { return g_nstrs; }

bool rf_str_texts(rf_word first, size_t n, const char **text, size_t *len)
{
    if (first > g_nstrs || n > g_nstrs - first)
        return false;
    const strentry *e = g_strs + first;
    for (size_t i = 0; i < n; i++) {
        text[i] = e[i].text;
        len[i] = e[i].len;
    }
    return true;
}
uint64_t rf_str_fingerprint(void) { return g_print ^ g_nstrs; }

void rf_str_reset(void)
{
    for (size_t i = 0; i < g_nchunks; i++)
        free(g_chunks[i]);
    free(g_chunks);
    free(g_strs);
    free(g_slots);
    g_chunks = NULL;
    g_strs = NULL;
    g_slots = NULL;
    g_free = NULL;
    g_nstrs = g_capstrs = g_nslots = g_nchunks = g_capchunks = g_free_len = 0;
    g_print = 0;
}
