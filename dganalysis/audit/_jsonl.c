/* The numbers of a sweep job's results.jsonl, read in one pass (dganalysis.audit.index, :func:`_compiled_lines`).
 *
 * A job's records repeat the first line's args, hparams and domain fields on every line; only the step, the
 * accuracies and the loss change. read_job checks that every line is one JSON object with the first line's keys in
 * the same order (the same bytes), the first line's bytes for the repeated fields, and extracts the step (an
 * integer), the accuracies (numbers or null) and the loss. It accepts a strict subset of JSON and returns None on
 * anything else (non-ASCII text, NaN/Infinity, a blank line, a value spanning lines, nesting deeper than 64, an
 * accuracy that overflows, ...): the caller then reads the job with the exact Python path, so the result never
 * depends on this module. Numbers are converted exactly (see to_double), so every value is the one json.loads and float() give.
 *
 * read_job(data: bytes, kinds: bytes) -> (n_lines, steps, accs, losses) | None
 *   kinds[i] says what the first line's i-th key is: 0 any other key (its value is checked, not kept), 1 a field
 *   every line must repeat byte for byte, 2 the step, 3 the loss, 4 + c an accuracy kept in column c (the columns
 *   are 0 .. n_acc - 1). steps: int64 × n_lines; accs: float64 × n_lines × n_acc, line after line (NaN for null);
 *   losses: float64 × n_lines (NaN where the loss is not a number), or None without a loss key. Native byte order.
 *
 * keys_unchanged(dir_fd, keys, spec_flag) -> True | False | None: an index's job keys checked against the folders
 *   (see below; dganalysis.audit.index_file).
 * list_jobs(dir_fd, names, known, job_files) -> list: a store's job folders listed and stat'ed (see below).
 *
 * Built by `pip install` as an optional extension (setup.py). It needs a C compiler with unsigned __int128
 * (GCC or Clang on a 64-bit platform); where the build fails, pip goes on without it and the index reads with
 * msgspec: the same numbers, a first read ~1.3x slower.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { K_OTHER = 0, K_SAME = 1, K_STEP = 2, K_LOSS = 3, K_ACC = 4 };
#define MAX_KEYS 250
#define MAX_DEPTH 64

typedef struct {
    const char *p, *end;
} Cursor;

/* JSON whitespace inside a line (a newline ends the line, so a value spanning lines is refused) */
static inline void skip_ws(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r')) c->p++;
}

static inline int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static inline int is_hex(char ch) {
    return is_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

static inline int expect(Cursor *c, char ch) {
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* a JSON string at c->p (its opening quote); ASCII only, JSON's escapes */
static int skip_string(Cursor *c) {
    const char *p = c->p + 1;
    while (p < c->end) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"') {
            c->p = p + 1;
            return 1;
        }
        if (ch < 0x20 || ch >= 0x80) return 0; /* a control character (invalid) or non-ASCII (left to Python) */
        if (ch == '\\') {
            if (++p >= c->end) return 0;
            switch (*p) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p++;
                break;
            case 'u':
                if (c->end - p < 5 || !is_hex(p[1]) || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4])) return 0;
                p += 5;
                break;
            default:
                return 0;
            }
            continue;
        }
        p++;
    }
    return 0;
}

/* A JSON number token, as scanned: its decimal w * 10^q when it has at most 19 significant digits and a modest
 * exponent (exact = 1), its sign, whether it is an integer literal and its count of integer digits. */
typedef struct {
    uint64_t w;
    int q, exact, neg, is_int;
    Py_ssize_t int_digits;
} Number;

/* a JSON number at c->p, by JSON's grammar (json.loads's NUMBER_RE): -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?
 * with its decimal gathered on the way (see Number) */
static int scan_number(Cursor *c, Number *n) {
    const char *p = c->p, *end = c->end, *digits;
    int sig = 0, exp = 0, exp_neg = 0;
    n->w = 0;
    n->q = 0;
    n->exact = 1;
    n->is_int = 1;
    n->neg = p < end && *p == '-';
    p += n->neg;
    digits = p;
    if (p < end && *p == '0') {
        p++;
    } else if (p < end && *p >= '1' && *p <= '9') {
        for (; p < end && is_digit(*p); p++) {
            if (++sig > 19) n->exact = 0;
            else n->w = n->w * 10 + (uint64_t)(*p - '0');
        }
    } else {
        return 0;
    }
    n->int_digits = p - digits;
    if (sig > 19) n->q = sig - 19; /* (not used: the token is converted by CPython) */
    if (p < end && *p == '.') {
        n->is_int = 0;
        if (++p >= end || !is_digit(*p)) return 0;
        for (; p < end && is_digit(*p); p++) {
            n->q--;
            if (n->w == 0 && *p == '0') continue; /* leading zeros are not significant */
            if (++sig > 19) n->exact = 0;
            else n->w = n->w * 10 + (uint64_t)(*p - '0');
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        n->is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) exp_neg = *p++ == '-';
        if (p >= end || !is_digit(*p)) return 0;
        for (; p < end && is_digit(*p); p++) {
            if (exp < 100000) exp = exp * 10 + (*p - '0');
        }
        if (exp > 400) n->exact = 0;
        n->q += exp_neg ? -exp : exp;
    }
    c->p = p;
    return 1;
}

static int skip_number(Cursor *c) {
    Number n;
    return scan_number(c, &n);
}

static int skip_literal(Cursor *c, const char *word, Py_ssize_t n) {
    if (c->end - c->p >= n && memcmp(c->p, word, (size_t)n) == 0) {
        c->p += n;
        return 1;
    }
    return 0;
}

/* any JSON value at c->p (checked, not kept) */
static int skip_value(Cursor *c, int depth) {
    if (c->p >= c->end) return 0;
    switch (*c->p) {
    case '"':
        return skip_string(c);
    case '{':
    case '[': {
        char close = *c->p == '{' ? '}' : ']';
        int object = close == '}';
        if (depth >= MAX_DEPTH) return 0;
        c->p++;
        skip_ws(c);
        if (expect(c, close)) return 1;
        for (;;) {
            if (object) {
                if (c->p >= c->end || *c->p != '"' || !skip_string(c)) return 0;
                skip_ws(c);
                if (!expect(c, ':')) return 0;
                skip_ws(c);
            }
            if (!skip_value(c, depth + 1)) return 0;
            skip_ws(c);
            if (expect(c, ',')) {
                skip_ws(c);
                continue;
            }
            return expect(c, close);
        }
    }
    case 't':
        return skip_literal(c, "true", 4);
    case 'f':
        return skip_literal(c, "false", 5);
    case 'n':
        return skip_literal(c, "null", 4);
    default:
        return skip_number(c);
    }
}

/* Powers of ten exactly representable as doubles (10^0 .. 10^22) */
static const double exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

typedef unsigned __int128 u128;

/* 10^0 .. 10^21 as 128-bit integers (filled when the module loads) */
static u128 pow10_u128[22];

static int bit_length(u128 x) {
    uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;
    return hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
}

/* The double nearest to w * 10^q (ties to even), exactly, when 1 <= w < 10^19 and -21 <= q <= 19: the quotient
 * floor(w * 10^q * 2^k) is computed in integers with k chosen so that it has 53 bits, and rounded with its
 * remainder. Every such value is a normal double, so scaling by 2^-k is exact. */
static double exact_decimal(uint64_t w, int q) {
    u128 num = w, den = 1;
    int k;
    if (w < ((uint64_t)1 << 53) && q >= -22 && q <= 22) /* Clinger's fast path: one correctly rounded operation */
        return q < 0 ? (double)w / exact_pow10[-q] : (double)w * exact_pow10[q];
    if (q < 0) den = pow10_u128[-q]; /* 10^|q| < 2^70 for |q| <= 21, and w * 10^19 < 2^128 */
    else num *= pow10_u128[q];
    /* num / den lies in [2^(bn - bd - 1), 2^(bn - bd + 1)) for bit lengths bn, bd: with k = 53 - (bn - bd) the
     * quotient floor(num * 2^k / den) has 53 or 54 bits; num * 2^k < 2^(54 + bd) <= 2^124, and for k < 0,
     * -k <= bn - 53 <= 75 (den = 1 then, or -k <= 7) */
    k = 53 - (bit_length(num) - bit_length(den));
    u128 n = k >= 0 ? num << k : num, d = k >= 0 ? den : den << -k;
    u128 quo = n / d, rem = n % d;
    if (bit_length(quo) == 54) { /* drop the last bit: it and the remainder decide the rounding */
        int half = (int)(quo & 1), sticky = rem != 0;
        quo >>= 1;
        k--;
        if (half && (sticky || (quo & 1))) quo++;
    } else if (2 * rem > d || (2 * rem == d && (quo & 1))) {
        quo++;
    }
    return ldexp((double)(uint64_t)quo, -k); /* quo <= 2^53: exact; the result is a normal double */
}

/* A number token [start, stop), scanned as n, as json.loads and float() give it. Tokens of up to 19 significant
 * digits with a small exponent are converted exactly here (exact_decimal: the one double nearest to the decimal,
 * as CPython's correctly rounded conversion gives it); the others by CPython's PyOS_string_to_double, the function
 * behind float(). Returns 0 (no exception) when the token is not read whole, -1 with an exception set on an
 * internal error. */
static int to_double(const char *start, const char *stop, const Number *n, double *out) {
    if (n->exact && n->w == 0) {
        *out = n->neg ? -0.0 : 0.0;
        return 1;
    }
    if (n->exact && n->q >= -21 && n->q <= 19) {
        *out = n->neg ? -exact_decimal(n->w, n->q) : exact_decimal(n->w, n->q);
        return 1;
    }
    char *endp = NULL;
    double v = PyOS_string_to_double(start, &endp, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
        PyErr_Clear();
        return 0;
    }
    if (endp != stop) return 0;
    *out = v;
    return 1;
}

/* the read; returns 1 when the data fits, 0 when not (no exception), -1 on an internal error */
static int read_lines(const char *data, Py_ssize_t size, const unsigned char *kinds, Py_ssize_t n_keys,
                      Py_ssize_t n_acc, Py_ssize_t n_lines, int64_t *steps, double *accs, double *losses) {
    const char *key_at[MAX_KEYS], *same_at[MAX_KEYS];
    Py_ssize_t key_len[MAX_KEYS], same_len[MAX_KEYS];
    Cursor c = {data, data + size};
    for (Py_ssize_t line = 0; line < n_lines; line++) {
        const char *nl = memchr(c.p, '\n', (size_t)(data + size - c.p));
        c.end = nl ? nl : data + size;
        skip_ws(&c);
        if (!expect(&c, '{')) return 0;
        skip_ws(&c);
        for (Py_ssize_t k = 0; k < n_keys; k++) {
            const char *start = c.p;
            int kind = kinds[k];
            Number num;
            if (k > 0) {
                if (!expect(&c, ',')) return 0;
                skip_ws(&c);
                start = c.p;
            }
            if (line == 0) { /* the first line sets the keys' bytes */
                if (c.p >= c.end || *c.p != '"' || !skip_string(&c)) return 0;
                key_at[k] = start;
                key_len[k] = c.p - start;
            } else {
                if (c.end - c.p < key_len[k] || memcmp(c.p, key_at[k], (size_t)key_len[k]) != 0) return 0;
                c.p += key_len[k];
            }
            skip_ws(&c);
            if (!expect(&c, ':')) return 0;
            skip_ws(&c);
            start = c.p;
            if (kind == K_SAME) {
                if (line == 0) {
                    if (!skip_value(&c, 0)) return 0;
                    same_at[k] = start;
                    same_len[k] = c.p - start;
                } else {
                    if (c.end - c.p < same_len[k] || memcmp(c.p, same_at[k], (size_t)same_len[k]) != 0) return 0;
                    c.p += same_len[k];
                }
            } else if (kind == K_STEP) { /* an integer within int64 (a float or bool is refused) */
                uint64_t mag;
                if (!scan_number(&c, &num) || !num.is_int || !num.exact) return 0; /* exact: <= 19 digits */
                mag = num.w;
                if (mag > (uint64_t)INT64_MAX + (num.neg ? 1u : 0u)) return 0;
                steps[line] = num.neg ? (int64_t)(0 - mag) : (int64_t)mag;
            } else if (kind >= K_ACC) { /* a number or null; one that overflows is left to Python */
                double v = NAN;
                if (!skip_literal(&c, "null", 4)) {
                    int ok;
                    if (!scan_number(&c, &num)) return 0;
                    ok = to_double(start, c.p, &num, &v);
                    if (ok <= 0) return ok;
                    if (!isfinite(v)) return 0;
                    if (num.is_int && v == 0.0) v = 0.0; /* "-0": json.loads gives the integer 0, float() makes +0.0 */
                }
                accs[line * n_acc + (kind - K_ACC)] = v;
            } else if (kind == K_LOSS) { /* kept when a number (an integer's float as float() gives it), else NaN */
                double v = NAN;
                if (c.p < c.end && (*c.p == '-' || is_digit(*c.p))) {
                    int ok;
                    if (!scan_number(&c, &num) || (num.is_int && num.int_digits > 17)) return 0;
                    ok = to_double(start, c.p, &num, &v);
                    if (ok <= 0) return ok;
                    if (num.is_int && v == 0.0) v = 0.0;
                } else if (!skip_value(&c, 0)) {
                    return 0;
                }
                losses[line] = v;
            } else if (!skip_value(&c, 0)) {
                return 0;
            }
            skip_ws(&c);
        }
        if (!expect(&c, '}')) return 0;
        skip_ws(&c);
        if (c.p != c.end) return 0; /* anything after the object (another value, a brace) */
        c.p = c.end + 1;            /* past the newline */
    }
    return 1;
}

static PyObject *read_job(PyObject *self, PyObject *args) {
    PyObject *data_obj, *kinds_obj;
    PyObject *steps = NULL, *accs = NULL, *losses = NULL, *result = NULL;
    Py_ssize_t n_lines = 0, n_acc = 0, has_loss = 0;
    int ok;
    (void)self;
    /* bytes objects: a number at the very end of the data is followed by their terminating NUL */
    if (!PyArg_ParseTuple(args, "O!O!:read_job", &PyBytes_Type, &data_obj, &PyBytes_Type, &kinds_obj)) return NULL;
    const char *buf = PyBytes_AS_STRING(data_obj);
    const unsigned char *kind = (const unsigned char *)PyBytes_AS_STRING(kinds_obj);
    Py_ssize_t size = PyBytes_GET_SIZE(data_obj), n_keys = PyBytes_GET_SIZE(kinds_obj);
    if (n_keys == 0 || n_keys > MAX_KEYS || size == 0) goto refuse;
    for (Py_ssize_t k = 0; k < n_keys; k++) {
        if (kind[k] >= K_ACC) n_acc++;
        if (kind[k] == K_LOSS) has_loss++;
    }
    {
        unsigned char seen[MAX_KEYS] = {0};
        for (Py_ssize_t k = 0; k < n_keys; k++) { /* the accuracy columns must be 0 .. n_acc - 1, each once */
            if (kind[k] < K_ACC) continue;
            if (kind[k] - K_ACC >= n_acc || seen[kind[k] - K_ACC]++) goto refuse;
        }
    }
    if (has_loss > 1) goto refuse;
    for (const char *p = buf, *end = buf + size; p < end;) { /* lines: newlines, and a last line without one */
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        n_lines++;
        if (!nl) break;
        p = nl + 1;
    }
    steps = PyBytes_FromStringAndSize(NULL, n_lines * (Py_ssize_t)sizeof(int64_t));
    accs = PyBytes_FromStringAndSize(NULL, n_lines * n_acc * (Py_ssize_t)sizeof(double));
    if (has_loss) losses = PyBytes_FromStringAndSize(NULL, n_lines * (Py_ssize_t)sizeof(double));
    if (!steps || !accs || (has_loss && !losses)) goto done;
    ok = read_lines(buf, size, kind, n_keys, n_acc, n_lines, (int64_t *)PyBytes_AS_STRING(steps),
                    (double *)PyBytes_AS_STRING(accs), has_loss ? (double *)PyBytes_AS_STRING(losses) : NULL);
    if (ok < 0) goto done;
    if (ok == 0) {
        Py_CLEAR(steps);
        Py_CLEAR(accs);
        Py_CLEAR(losses);
        goto refuse;
    }
    result = Py_BuildValue("(nOOO)", n_lines, steps, accs, has_loss ? losses : Py_None);
    goto done;
refuse:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(steps);
    Py_XDECREF(accs);
    Py_XDECREF(losses);
    return result;
}

/* keys_unchanged(dir_fd, keys, spec_flag) -> True | False | None: whether every flat job key (rel, size, mtime_ns,
 * flags, spec_mtime_ns, dir_mtime_ns) of an index still holds under the open folder dir_fd, compared as
 * dganalysis.audit.index_file._keys_unchanged compares them (its Python twin, the rule): the job folder's mtime
 * (the folder itself, not a link's target; any failure: changed), results.jsonl's size and mtime (absent: -1, -1)
 * and, where flags has spec_flag, spec.json's mtime (absent: -1). False at the first difference; None where a stat
 * fails otherwise than by absence or a key is not of that shape: the caller's scan decides then. The same system
 * calls as the Python twin, without an object per call: a repeated read of a 33,600-job sweep spends most of its
 * time here. */
static inline long long mtime_ns(const struct stat *st) { /* os.stat_result.st_mtime_ns */
#ifdef __APPLE__
    return (long long)st->st_mtimespec.tv_sec * 1000000000LL + (long long)st->st_mtimespec.tv_nsec;
#else
    return (long long)st->st_mtim.tv_sec * 1000000000LL + (long long)st->st_mtim.tv_nsec;
#endif
}

/* The stats a job key holds of the job folder ``prefix`` ("" for dfd itself, or "name/" under dfd): out[0], out[1]
 * results.jsonl's size and mtime, out[2] spec.json's mtime when want_spec; -1 for an absent file (or one not asked
 * for). 0, or -1 when a stat fails otherwise than by absence or the path would not fit. */
static int job_files(int dfd, const char *prefix, size_t len, int want_spec, long long out[3]) {
    char path[4096];
    struct stat st;
    out[0] = out[1] = out[2] = -1;
    if (len + sizeof("results.jsonl") > sizeof(path)) return -1;
    memcpy(path, prefix, len);
    memcpy(path + len, "results.jsonl", sizeof("results.jsonl"));
    if (fstatat(dfd, path, &st, 0) == 0) {
        out[0] = (long long)st.st_size;
        out[1] = mtime_ns(&st);
    } else if (errno != ENOENT) {
        return -1;
    }
    if (want_spec) {
        memcpy(path + len, "spec.json", sizeof("spec.json"));
        if (fstatat(dfd, path, &st, 0) == 0) out[2] = mtime_ns(&st);
        else if (errno != ENOENT) return -1;
    }
    return 0;
}

static PyObject *keys_unchanged(PyObject *self, PyObject *args) {
    int fd;
    long long spec_flag;
    PyObject *keys;
    (void)self;
    if (!PyArg_ParseTuple(args, "iOL:keys_unchanged", &fd, &keys, &spec_flag)) return NULL;
    PyObject *seq = PySequence_Fast(keys, "keys_unchanged: keys must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *result = Py_None;
    char path[4096];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = items[i];
        PyObject **f;
        if (PyList_Check(key) && PyList_GET_SIZE(key) == 6) f = &PyList_GET_ITEM(key, 0);
        else if (PyTuple_Check(key) && PyTuple_GET_SIZE(key) == 6) f = &PyTuple_GET_ITEM(key, 0);
        else goto done; /* None */
        Py_ssize_t len;
        const char *rel = PyUnicode_Check(f[0]) ? PyUnicode_AsUTF8AndSize(f[0], &len) : NULL;
        if (!rel) {
            PyErr_Clear();
            goto done;
        }
        long long v[5];
        for (int k = 0; k < 5; k++) {
            v[k] = PyLong_Check(f[k + 1]) ? PyLong_AsLongLong(f[k + 1]) : -2;
            if (v[k] == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                goto done;
            }
        }
        long long size = v[0], mtime = v[1], flags = v[2], spec_mtime = v[3], dir_mtime = v[4];
        if ((size_t)len + 2 > sizeof(path) || memchr(rel, '\0', (size_t)len)) goto done;
        struct stat st;
        if (fstatat(fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0 || mtime_ns(&st) != dir_mtime) goto changed;
        memcpy(path, rel, (size_t)len);
        path[len] = '/';
        long long got[3];
        if (job_files(fd, path, (size_t)len + 1, (flags & spec_flag) != 0, got) != 0) goto done;
        if (got[0] != size || (got[0] != -1 && got[1] != mtime) || ((flags & spec_flag) && got[2] != spec_mtime))
            goto changed;
    }
    result = Py_True;
    goto done;
changed:
    result = Py_False;
done:
    Py_DECREF(seq);
    return Py_NewRef(result);
}

/* list_jobs(dir_fd, names, known, job_files) -> list: the folders ``names`` of the open folder dir_fd, each listed
 * as dganalysis.audit.index_file._walk lists a folder (its Python twin, the rule) and, when a job, stat'ed as
 * index_file.scan stats one. Per name, in order:
 *   None            the folder cannot be opened or listed (os.walk skips it);
 *   False           it holds no job file: the caller walks it (its sub-folders may hold jobs);
 *   (flags, dir_mtime_ns, size, mtime_ns, spec_mtime_ns)  a job: flags 1 done, 2 failed, 4 spec.json; results.jsonl's
 *                   size and mtime (-1, -1 when absent); spec.json's mtime (-1 without it, or absent);
 *   or a str        a stat of results.jsonl or spec.json failed otherwise than by absence: the caller stats again
 *                   (and raises as the Python path does).
 * known[i] is None or (dir_mtime_ns, flags) from the index: a folder whose own mtime (not following a link) is that
 * one is not listed again (its files are the same), only its results.jsonl and spec.json are stat'ed.
 * job_files: the names that make a folder a job (dganalysis.results.JOB_FILES). A file is any entry that is not a
 * folder (a link counts as what it points to; one that cannot be followed is a file). */
static int is_job_name(const char *name, PyObject *job_files) {
    Py_ssize_t n = PyTuple_GET_SIZE(job_files);
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *f = PyUnicode_AsUTF8(PyTuple_GET_ITEM(job_files, i));
        if (f && strcmp(f, name) == 0) return 1;
    }
    return 0;
}

static PyObject *job_entry(int dfd, const char *prefix, long long flags, long long dir_mtime) {
    /* prefix: "" (dfd the job folder) or "name/" (dfd its parent); a str when a stat failed */
    long long got[3];
    if (job_files(dfd, prefix, strlen(prefix), (flags & 4) != 0, got) != 0) return PyUnicode_FromString("stat failed");
    return Py_BuildValue("(LLLLL)", flags, dir_mtime, got[0], got[1], got[2]);
}

static PyObject *list_one(int fd, const char *name, PyObject *known, PyObject *job_files) {
    struct stat st;
    if (known != Py_None) {
        long long k_mtime, k_flags;
        if (!PyArg_ParseTuple(known, "LL", &k_mtime, &k_flags)) return NULL;
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && mtime_ns(&st) == k_mtime) {
            char prefix[4096];
            size_t len = strlen(name);
            if (len + 2 > sizeof(prefix)) return PyUnicode_FromString("results.jsonl");
            memcpy(prefix, name, len);
            memcpy(prefix + len, "/", 2);
            return job_entry(fd, prefix, k_flags, k_mtime);
        }
    }
    int dfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return Py_NewRef(Py_None);
    if (fstat(dfd, &st) != 0) {
        close(dfd);
        return Py_NewRef(Py_None);
    }
    long long dir_mtime = mtime_ns(&st);
    DIR *dir = fdopendir(dfd); /* owns dfd from here: closedir closes it */
    if (!dir) {
        close(dfd);
        return Py_NewRef(Py_None);
    }
    long long flags = 0;
    int job = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(dir)) != NULL) {
        const char *n = e->d_name;
        if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
        int is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) { /* DirEntry.is_dir(): follows a link */
            is_dir = fstatat(dfd, n, &st, 0) == 0 && S_ISDIR(st.st_mode);
        }
        if (is_dir) continue;
        if (is_job_name(n, job_files)) job = 1;
        if (strcmp(n, "done") == 0) flags |= 1;
        else if (strcmp(n, "failed") == 0) flags |= 2;
        else if (strcmp(n, "spec.json") == 0) flags |= 4;
        errno = 0;
    }
    PyObject *out;
    if (errno != 0) out = Py_NewRef(Py_None);
    else if (!job) out = Py_NewRef(Py_False);
    else out = job_entry(dfd, "", flags, dir_mtime);
    closedir(dir);
    return out;
}

static PyObject *list_jobs(PyObject *self, PyObject *args) {
    int fd;
    PyObject *names, *known, *job_files;
    (void)self;
    if (!PyArg_ParseTuple(args, "iO!O!O!:list_jobs", &fd, &PyList_Type, &names, &PyList_Type, &known,
                          &PyTuple_Type, &job_files))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(names);
    if (PyList_GET_SIZE(known) != n) {
        PyErr_SetString(PyExc_ValueError, "list_jobs: names and known differ in length");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(job_files); i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(job_files, i))) {
            PyErr_SetString(PyExc_TypeError, "list_jobs: job_files must be a tuple of str");
            return NULL;
        }
    }
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name_obj = PyList_GET_ITEM(names, i);
        Py_ssize_t len;
        const char *name = PyUnicode_Check(name_obj) ? PyUnicode_AsUTF8AndSize(name_obj, &len) : NULL;
        if (!name || memchr(name, '\0', (size_t)len)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "list_jobs: names must be str without NUL");
            Py_DECREF(out);
            return NULL;
        }
        PyObject *item = list_one(fd, name, PyList_GET_ITEM(known, i), job_files);
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"read_job", read_job, METH_VARARGS,
     "read_job(data, kinds) -> (n_lines, steps, accs, losses) or None: a results.jsonl's numbers (see the C source)"},
    {"list_jobs", list_jobs, METH_VARARGS,
     "list_jobs(dir_fd, names, known, job_files) -> list: the folders listed and stat'ed as a scan does "
     "(see the C source)"},
    {"keys_unchanged", keys_unchanged, METH_VARARGS,
     "keys_unchanged(dir_fd, keys, spec_flag) -> True, False or None: whether an index's flat job keys still hold "
     "(see the C source)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_jsonl", "A sweep job's results.jsonl numbers, read in "
                                    "one pass, and an index's job keys checked (dganalysis.audit.index, index_file).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__jsonl(void) {
    pow10_u128[0] = 1;
    for (int i = 1; i < 22; i++) pow10_u128[i] = pow10_u128[i - 1] * 10;
    return PyModule_Create(&module);
}
