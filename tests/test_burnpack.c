/* test_burnpack.c - Burnpack (.bpk) reader and writer: every fixture against independently
 * computed values, byte-exact rewrites (directly and through .ingot), version discrimination
 * (0.19 / 0.20 / 0.21 and the ambiguous cases), the malformed catalogue of RELIABILITY.md §1,
 * writer options and refusals, CLI smoke.
 *
 * Expected values were computed at authoring time by /usr/bin/python3 with a separate CBOR
 * decoder written from RFC 8949 and numpy (not by this library):
 *
 *   def dec(b, i):   # major types 0, 3, 4, 5 with 0..27 additional info, as Burn writes
 *       ib = b[i]; mt, ai = ib >> 5, ib & 31; i += 1
 *       if ai < 24: v = ai
 *       elif ai == 24: v = b[i]; i += 1
 *       elif ai == 25: v = struct.unpack('>H', b[i:i+2])[0]; i += 2
 *       elif ai == 26: v = struct.unpack('>I', b[i:i+4])[0]; i += 4
 *       else: v = struct.unpack('>Q', b[i:i+8])[0]; i += 8
 *       if mt == 0: return v, i
 *       if mt == 3: return b[i:i+v].decode(), i + v
 *       if mt == 4: ...list of v items...;  if mt == 5: ...dict of v pairs...
 *   b = open(path, 'rb').read(); msz = struct.unpack('<I', b[6:10])[0]
 *   meta, end = dec(b, 10); ds = (10 + msz + 255) // 256 * 256
 *   for name, d in sorted(meta['tensors'].items(), key=lambda kv: (kv[1]['data_offsets'], kv[0])):
 *       s, e = d['data_offsets']; print(name, d['dtype'], d['shape'], ds + s, d.get('param_id'),
 *                                       hashlib.sha256(b[ds+s:ds+e]).hexdigest())
 *   # and np.frombuffer(b[ds+s:ds+e], '<f4') for the small F32 tensors
 */
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "files.h"
#include "support/sha256.h"

#define FIX INGOT_FIXTURES "/burnpack"

/* ---------------------------------------------------------------------------------------------
 * helpers
 * ------------------------------------------------------------------------------------------- */

static const void *find_bytes(const void *hay, size_t n, const void *needle, size_t k)
{
    for (size_t i = 0; k <= n && i <= n - k; i++)
        if (memcmp((const uint8_t *)hay + i, needle, k) == 0) return (const uint8_t *)hay + i;
    return NULL;
}

/* a counting allocator: nothing may stay allocated after close or a failed open */
typedef struct {
    long live;
    size_t peak_single;
} counter;
static void *c_alloc(void *ctx, size_t size, size_t align)
{
    counter *c = ctx;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    c->live += (long)size;
    if (size > c->peak_single) c->peak_single = size;
    return p;
}
static void c_free(void *ctx, void *p, size_t size)
{
    counter *c = ctx;
    if (p) c->live -= (long)size;
    free(p);
}

static ingot_status open_buf(const uint8_t *b, size_t n, ingot_file **f, ingot_error *e)
{
    ingot_open_opts o = {0};
    o.format = "burnpack";
    return ingot_file_open_buffer(b, n, &o, f, e);
}

/* Opens (b, n) with the counting allocator; returns the status, checks no leak. */
static counter last_counter;
static ingot_status try_open(const uint8_t *b, size_t n, ingot_error *e)
{
    counter c = {0, 0};
    ingot_allocator a = {c_alloc, c_free, &c};
    ingot_open_opts o = {0};
    o.format = "burnpack";
    o.allocator = &a;
    ingot_file *f = NULL;
    ingot_status st = ingot_file_open_buffer(b, n, &o, &f, e);
    if (st == INGOT_OK) {
        /* touch every view */
        for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
            ingot_tensor_info t;
            if (ingot_file_tensor_at(f, i, &t) == INGOT_OK && t.nbytes && t.data) {
                volatile uint8_t x = ((const uint8_t *)t.data)[0];
                x = ((const uint8_t *)t.data)[t.nbytes - 1];
                (void)x;
            }
        }
        ingot_file_close(f);
    }
    last_counter = c;
    if (c.live != 0) fprintf(stderr, "  leak of %ld bytes (status %s)\n", c.live, ingot_status_name(st));
    return c.live == 0 ? st : (ingot_status)-1;
}

static void sha_of_tensor(const ingot_file *f, uint64_t i, char hex[65])
{
    ingot_tensor_info t;
    ingot_file_tensor_at(f, i, &t);
    uint8_t *buf = malloc(t.nbytes ? (size_t)t.nbytes : 1);
    ingot_error e;
    if (ingot_file_tensor_read(f, i, 0, buf, (size_t)t.nbytes, &e) != INGOT_OK) hex[0] = 0;
    else test_sha256_hex(buf, (size_t)t.nbytes, hex);
    free(buf);
}

/* ---- a small CBOR/Burnpack builder for hand-made files ---- */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} vec;
static void put(vec *v, const void *s, size_t n)
{
    if (v->n + n > v->cap) {
        v->cap = (v->n + n) * 2 + 64;
        v->p = realloc(v->p, v->cap);
    }
    memcpy(v->p + v->n, s, n);
    v->n += n;
}
static void put1(vec *v, uint8_t b) { put(v, &b, 1); }
static void head(vec *v, unsigned major, uint64_t x)
{
    uint8_t m = (uint8_t)(major << 5);
    if (x < 24) put1(v, m | (uint8_t)x);
    else if (x < 256) put1(v, m | 24), put1(v, (uint8_t)x);
    else if (x < 65536) put1(v, m | 25), put1(v, (uint8_t)(x >> 8)), put1(v, (uint8_t)x);
    else if (x <= 0xffffffffu) {
        put1(v, m | 26);
        for (int k = 3; k >= 0; k--) put1(v, (uint8_t)(x >> (8 * k)));
    } else {
        put1(v, m | 27);
        for (int k = 7; k >= 0; k--) put1(v, (uint8_t)(x >> (8 * k)));
    }
}
static void text(vec *v, const char *s)
{
    head(v, 3, strlen(s));
    put(v, s, strlen(s));
}
/* descriptor with dtype given as raw CBOR (NULL: text dtype `dt`) */
static void desc(vec *v, const char *name, const char *dt, const vec *raw, int rank,
                 const uint64_t *shape, uint64_t s, uint64_t e, bool pid, uint64_t pv)
{
    text(v, name);
    head(v, 5, pid ? 4 : 3);
    text(v, "dtype");
    if (raw) put(v, raw->p, raw->n);
    else text(v, dt);
    text(v, "shape");
    head(v, 4, (uint64_t)rank);
    for (int d = 0; d < rank; d++) head(v, 0, shape[d]);
    text(v, "data_offsets");
    head(v, 4, 2);
    head(v, 0, s);
    head(v, 0, e);
    if (pid) {
        text(v, "param_id");
        head(v, 0, pv);
    }
}
/* file = header + meta + padding to 256 (aligned) or none + data_len bytes of data (fill) */
static uint8_t *mkfile(const vec *meta, bool aligned, size_t data_len, uint8_t fill, size_t *n)
{
    size_t u = 10 + meta->n, ds = aligned ? (u + 255) / 256 * 256 : u;
    *n = ds + data_len;
    uint8_t *b = calloc(1, *n ? *n : 1);
    memcpy(b, "NRUB\x01\x00", 6);
    b[6] = (uint8_t)meta->n, b[7] = (uint8_t)(meta->n >> 8), b[8] = (uint8_t)(meta->n >> 16),
    b[9] = (uint8_t)(meta->n >> 24);
    memcpy(b + 10, meta->p, meta->n);
    memset(b + ds, fill, data_len);
    return b;
}
/* {"tensors": {one tensor}} with a text dtype */
static uint8_t *one(const char *dt, int rank, const uint64_t *shape, uint64_t s, uint64_t e,
                    bool aligned, size_t data_len, size_t *n)
{
    vec m = {0};
    head(&m, 5, 1);
    text(&m, "tensors");
    head(&m, 5, 1);
    desc(&m, "x", dt, NULL, rank, shape, s, e, false, 0);
    uint8_t *b = mkfile(&m, aligned, data_len, 1, n);
    free(m.p);
    return b;
}

/* ---- writer helpers ---- */
static ingot_status copy_into(ingot_writer *w, const ingot_file *f, ingot_error *e);

static void notice_count(void *ctx, const char *msg)
{
    (void)msg;
    (*(int *)ctx)++;
}

/* Reads f through ingot and writes it with the burnpack writer into memory. */
static ingot_status rewrite(const ingot_file *f, const char *layout, uint8_t **out, size_t *n,
                            int *notices, ingot_error *e)
{
    ingot_writer_opts wo = {0};
    wo.format = "burnpack";
    ingot_writer *w;
    ingot_status st = ingot_writer_new(&wo, &w, e);
    if (st != INGOT_OK) return st;
    if (notices) ingot_writer_set_notice(w, notice_count, notices);
    if (layout) st = ingot_writer_set_option(w, "layout", layout, e);
    if (st == INGOT_OK) st = copy_into(w, f, e);
    void *mem = NULL;
    if (st == INGOT_OK) st = ingot_writer_begin_mem(w, e);
    if (st == INGOT_OK) st = ingot_writer_commit_mem(w, &mem, n, e);
    if (st == INGOT_OK) {
        *out = malloc(*n ? *n : 1);
        memcpy(*out, mem, *n);
        ingot_writer_free_mem(NULL, mem, *n);
    }
    ingot_writer_free(w);
    return st;
}

/* Copies metadata (every type) and tensors (with data pointers read out) like `convert`. */
static uint8_t *tensor_bytes[64];
static ingot_status copy_into(ingot_writer *w, const ingot_file *f, ingot_error *e)
{
    ingot_status st = INGOT_OK;
    for (uint64_t i = 0; i < ingot_file_meta_count(f) && st == INGOT_OK; i++) {
        ingot_meta_info m;
        ingot_file_meta_at(f, i, &m);
        char key[512];
        snprintf(key, sizeof key, "%.*s", (int)m.key_len, m.key);
        if (m.is_array && m.type == INGOT_META_U64) {
            uint64_t v[16];
            ingot_file_meta_array_read(f, i, m.type, 0, m.count, v);
            st = ingot_writer_set_array(w, key, m.type, v, m.count);
        } else if (m.type == INGOT_META_STRING) {
            st = ingot_writer_set_stringn(w, key, m.data, (size_t)m.count);
        } else {
            return INGOT_UNSUPPORTED;
        }
    }
    for (uint64_t i = 0; i < ingot_file_tensor_count(f) && st == INGOT_OK; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        free(tensor_bytes[i % 64]);
        tensor_bytes[i % 64] = malloc(t.nbytes ? (size_t)t.nbytes : 1);
        ingot_file_tensor_read(f, i, 0, tensor_bytes[i % 64], (size_t)t.nbytes, NULL);
        ingot_tensor_opts to = {(t.flags & INGOT_TENSOR_HAS_PARAM_ID) != 0, t.param_id};
        st = ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, &to,
                                     tensor_bytes[i % 64], e);
    }
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Fixtures
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    ingot_dtype dt;
    uint64_t shape[4];
    uint32_t rank;
    uint64_t offset;
    bool has_pid;
    uint64_t pid;
    const char *sha;
} exp_t;

static const exp_t real_exp[] = {
    {"conv1.conv.weight", INGOT_DTYPE_F32, {64, 1, 3, 3}, 4, 1536, 1, 10777079075451239370ull, "c508c80b48200f31dd7d930ab2877090c6001630dd6cb6d07098bbf16f8339e2"},
    {"conv1.conv.bias", INGOT_DTYPE_F32, {64}, 1, 3840, 1, 9505838338724798577ull, "157e7ef39154574209bc1dfca58dc565a2cc648d2fb69ffe1f77dbf811971e00"},
    {"conv1.norm.gamma", INGOT_DTYPE_F32, {64}, 1, 4096, 1, 3366457416367518553ull, "e0d9a2fb759299d008d704c2720716e16aafb7b5e9c416ff6d60676c117c0ded"},
    {"conv1.norm.beta", INGOT_DTYPE_F32, {64}, 1, 4352, 1, 2754571703519099271ull, "1c2eb60fde801b716e8791b6682dd83826faa3fb016729f092f647e9e9aa37b5"},
    {"conv1.norm.running_mean", INGOT_DTYPE_F32, {64}, 1, 4608, 1, 14629392822177388866ull, "b4276684a54169a4bc937dde3478b66af83eef5566c3043d5cc8fc38b90aecf4"},
    {"conv1.norm.running_var", INGOT_DTYPE_F32, {64}, 1, 4864, 1, 10589899029590977807ull, "30a4b531de8e7bd6cab3bfa4566767f340aa700b1701eedd09cefb885ae62e9a"},
    {"conv2.conv.weight", INGOT_DTYPE_F32, {64, 64, 3, 3}, 4, 5120, 1, 11182327050026330461ull, "fcc4804759e49f91c897df2faaf2a88f6e2c6d9c07e00e6b071b11d3e7ca8853"},
    {"conv2.conv.bias", INGOT_DTYPE_F32, {64}, 1, 152576, 1, 15610936121904110070ull, "2a0b5fa99be1c211ed34db7a706320fac4e0715dbc6d1c0c9d0b449c6240bc8a"},
    {"conv2.norm.gamma", INGOT_DTYPE_F32, {64}, 1, 152832, 1, 5162429217262430322ull, "2858d1fd9810d758e58e597fe036f404354a61921bdacc9cbdd8dd1cc7c524b9"},
    {"conv2.norm.beta", INGOT_DTYPE_F32, {64}, 1, 153088, 1, 425276833309772702ull, "e4ef429602e344d26f142590eceabfb66a6301cbddf5dc46548284bc697a307e"},
    {"conv2.norm.running_mean", INGOT_DTYPE_F32, {64}, 1, 153344, 1, 7653953462918125781ull, "e001f95a253250a69fb9ad295c4c1337766e4605c03ec3b773bd571f4436c58f"},
    {"conv2.norm.running_var", INGOT_DTYPE_F32, {64}, 1, 153600, 1, 17310467163264002046ull, "561c40b0e4adf522cf2b0329869176612398952550299842b4b56feb22d1db59"},
    {"fc1.weight", INGOT_DTYPE_F32, {1600, 128}, 2, 153856, 1, 1730029982897944783ull, "cf1ec460c84530415873eb15d0702937451aa21af617621c15d54c73dcb055d8"},
    {"fc1.bias", INGOT_DTYPE_F32, {128}, 1, 973056, 1, 15905375811386401305ull, "eaf2873143b48b0d4b00ffe94a1889449253f23e06ed8e7100274ecf12c1bb85"},
    {"fc2.weight", INGOT_DTYPE_F32, {128, 128}, 2, 973568, 1, 6156368336105823443ull, "2203cae91b9650273c150cd1453285f7222ce8ff4b4d4c51d84f0e6556bc9c42"},
    {"fc2.bias", INGOT_DTYPE_F32, {128}, 1, 1039104, 1, 10157234230921783009ull, "8e939ffcf00cc004f30190e4b7fea27e666bf2c5a5775c8ad8c97b3b3f1215fc"},
    {"fc3.weight", INGOT_DTYPE_F32, {128, 10}, 2, 1039616, 1, 9562590261885004638ull, "7b5ad93736b96a52b2c5a58c3f728819a9a52283b3cf28ed0d055786dddcb7a6"},
    {"fc3.bias", INGOT_DTYPE_F32, {10}, 1, 1044736, 1, 7846584638995852899ull, "bab5b30aedf17491d65c9ad316d79d99a6671455daa0b2141c03e2af512556ab"},
};
static const exp_t a_exp[] = {
    {"weight", INGOT_DTYPE_F32, {2, 2}, 2, 256, 1, 42, "ad73b9acd6e4a74b2f5bb5386658ce3bb146cd040a1867646ab3b973fb6632b1"},
};
static const exp_t b_exp[] = {
    {"lin.weight", INGOT_DTYPE_F32, {3, 2}, 2, 512, 1, 7, "aa35b2f2f32287b193101d22e1ea31646b55d44002dafca4dfe272b712f5ddbe"},
    {"lin.bias", INGOT_DTYPE_F32, {2}, 1, 768, 1, 8, "2dc6ad64a41cf5fa205222c306fccc1e62685dd486a3923bcff6657587119f4e"},
    {"emb.half", INGOT_DTYPE_F16, {2}, 1, 1024, 0, 0, "6b60ada811679b7b8aeee509afcdd89fde521eef8c3686639eb8c923d109c639"},
    {"emb.bf", INGOT_DTYPE_BF16, {2}, 1, 1280, 0, 0, "7b429b1e3fd37fd03505ae4982471ea2c830392213b48a4e69976b5ebebce8e4"},
    {"steps", INGOT_DTYPE_I64, {1}, 1, 1536, 0, 0, "5fbbc50a5e0bc4e1bb5ea4bbacda5ae6709eff8e286fb002fee73a4913820fe9"},
    {"mask", INGOT_DTYPE_BOOL, {4}, 1, 1792, 0, 0, "52a5c4a10657220cac05c63adfa923c7771c55d868a58ee360eb3d1511985c3e"},
    {"bytes", INGOT_DTYPE_U8, {3}, 1, 2048, 0, 0, "06df4f7e1394f1c57cc6583fba4d8060a5a66f4f4771c14aeff6b9af8a28c9b3"},
};
static const exp_t d_exp[] = {
    {"mask", INGOT_DTYPE_BOOL, {2}, 1, 256, 0, 0, "b413f47d13ee2fe6c845b2ee141af81de858df4ec549a58b7970bb96645bc8d2"},
};

typedef struct {
    const char *file, *sha, *version;
    size_t size;
    const exp_t *t;
    size_t nt;
    const char *meta[4][2]; /* key, value (string entries) */
} fixture;

static const fixture fixtures[] = {
    {"real/mnist-inference-web_model.bpk", "b63e660152b3865b1b630c97af6df1fcbc04206648d3a03b3636fcc795ecc472", "0.20-0.21", 1044776, real_exp, 18, {{0}}},
    {"synthetic/a_single_f32.bpk", "d295c59b6577aeef77ce4cd04f81de73fd906304553bd1091bb9449a7fa1ecb4", "0.20-0.21", 272, a_exp, 1, {{"producer", "burn-pack docs"}}},
    {"synthetic/b_multi_dtype_v021.bpk", "fd2b847621c2da733de296564b4546d584ec4816d5e862c0c2bf855594317414", "0.21", 2051, b_exp, 7, {{"format", "burnpack"}, {"producer", "burn"}, {"version", "0.21.0"}}},
    {"synthetic/c_empty.bpk", "d51cafc1a9901c1d26d289a9e29457bb4bb041f704ee783577e890d516927813", "0.20-0.21", 256, NULL, 0, {{0}}},
    {"synthetic/d_bool_v020.bpk", "cdfbb6999fd3582e58950c0c6f3f67d27ad090aff9a81274700b5abb9990c829", "0.20", 258, d_exp, 1, {{"ingot.burnpack.layout", "0.20"}}},
};
#define N_FIX (sizeof fixtures / sizeof fixtures[0])

static void check_fixture(const fixture *fx, ingot_io_mode io)
{
    char path[512], hex[65];
    snprintf(path, sizeof path, FIX "/%s", fx->file);
    ingot_open_opts o = {0};
    o.io = io;
    ingot_file *f;
    ingot_error e;
    ingot_status st = ingot_file_open(path, &o, &f, &e);
    CHECK(st == INGOT_OK, "%s: %s %s", fx->file, ingot_status_name(st), e.msg);
    if (st != INGOT_OK) return;
    CHECK(strcmp(ingot_file_format(f), "burnpack") == 0, "%s format", fx->file);
    CHECK(strcmp(ingot_file_version(f), fx->version) == 0, "%s version %s", fx->file,
          ingot_file_version(f));
    CHECK(ingot_file_size(f) == fx->size, "%s size", fx->file);
    CHECK(ingot_file_alignment(f) == 256, "%s alignment", fx->file);
    CHECK(ingot_file_tensor_count(f) == fx->nt, "%s count", fx->file);
    for (size_t i = 0; i < fx->nt && i < ingot_file_tensor_count(f); i++) {
        const exp_t *x = &fx->t[i];
        ingot_tensor_info t, t2;
        ingot_file_tensor_at(f, i, &t);
        CHECK(strcmp(t.name, x->name) == 0 && t.name_len == strlen(x->name), "%s[%zu] name %s",
              fx->file, i, t.name);
        CHECK(t.dtype == x->dt, "%s dtype", x->name);
        CHECK(t.rank == x->rank, "%s rank", x->name);
        for (uint32_t d = 0; d < x->rank; d++) CHECK(t.shape[d] == x->shape[d], "%s dim", x->name);
        CHECK(t.offset == x->offset, "%s offset %llu", x->name, (unsigned long long)t.offset);
        CHECK(!!(t.flags & INGOT_TENSOR_HAS_PARAM_ID) == x->has_pid, "%s pid flag", x->name);
        CHECK(!x->has_pid || t.param_id == x->pid, "%s pid", x->name);
        CHECK(!(t.flags & INGOT_TENSOR_UNALIGNED), "%s aligned", x->name);
        CHECK(io == INGOT_IO_PREAD ? (t.flags & INGOT_TENSOR_NOT_MAPPED) && !t.data
                                   : t.data != NULL,
              "%s zero-copy view", x->name);
        sha_of_tensor(f, i, hex);
        CHECK(strcmp(hex, x->sha) == 0, "%s sha %s", x->name, hex);
        CHECK(ingot_file_tensor_find(f, x->name, &t2) == INGOT_OK && t2.index == i, "%s find",
              x->name);
    }
    ingot_tensor_info none;
    CHECK(ingot_file_tensor_find(f, "nope", &none) == INGOT_NOT_FOUND, "find missing");
    size_t nm = 0;
    for (; nm < 4 && fx->meta[nm][0]; nm++) {
        const char *s;
        size_t len;
        CHECK(ingot_file_meta_get_string(f, fx->meta[nm][0], &s, &len) == INGOT_OK &&
                  len == strlen(fx->meta[nm][1]) && memcmp(s, fx->meta[nm][1], len) == 0,
              "%s meta %s", fx->file, fx->meta[nm][0]);
    }
    CHECK(ingot_file_meta_count(f) == nm, "%s meta count %llu", fx->file,
          (unsigned long long)ingot_file_meta_count(f));
    CHECK(ingot_file_verify(f, 2, &e) == INGOT_OK, "%s verify: %s", fx->file, e.msg);
    ingot_file_close(f);
}

TEST(test_burnpack_fixtures_mmap)
{
    for (size_t k = 0; k < N_FIX; k++) {
        char path[512], hex[65];
        size_t n;
        snprintf(path, sizeof path, FIX "/%s", fixtures[k].file);
        uint8_t *b = test_read_file(path, &n);
        ASSERT_TRUE(b != NULL);
        test_sha256_hex(b, n, hex);
        CHECK(strcmp(hex, fixtures[k].sha) == 0, "fixture %s changed", fixtures[k].file);
        free(b);
        check_fixture(&fixtures[k], INGOT_IO_MMAP);
    }
}

TEST(test_burnpack_fixtures_pread)
{
    for (size_t k = 0; k < N_FIX; k++) check_fixture(&fixtures[k], INGOT_IO_PREAD);
}

/* Values from the fixture README, checked element by element. */
TEST(test_burnpack_values)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "/synthetic/b_multi_dtype_v021.bpk", NULL, &f, NULL));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "lin.weight", &t));
    const float w[6] = {0.5f, -1, 2, 0.25f, -0.75f, 1.5f};
    ASSERT_MEM(t.data, w, 24);
    ASSERT_OK(ingot_file_tensor_find(f, "lin.bias", &t));
    const float bias[2] = {0.1f, -0.2f};
    ASSERT_MEM(t.data, bias, 8);
    ASSERT_OK(ingot_file_tensor_find(f, "emb.half", &t));
    ASSERT_MEM(t.data, "\x00\x3c\x00\x40", 4);
    ASSERT_OK(ingot_file_tensor_find(f, "emb.bf", &t));
    ASSERT_MEM(t.data, "\x80\x3f\x00\xc0", 4);
    ASSERT_OK(ingot_file_tensor_find(f, "steps", &t));
    int64_t steps;
    memcpy(&steps, t.data, 8);
    ASSERT_EQ(steps, 300);
    ASSERT_OK(ingot_file_tensor_find(f, "mask", &t));
    ASSERT_MEM(t.data, "\x01\x00\x01\x01", 4);
    ASSERT_OK(ingot_file_tensor_find(f, "bytes", &t));
    ASSERT_MEM(t.data, "\x09\x08\x07", 3);
    uint8_t dense[24];
    ASSERT_OK(ingot_file_tensor_copy(f, 0, dense, sizeof dense, NULL));
    ASSERT_MEM(dense, w, 24);
    ingot_file_close(f);
    ASSERT_OK(ingot_file_open(FIX "/synthetic/a_single_f32.bpk", NULL, &f, NULL));
    const float a[4] = {1, 2, 3, 4};
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_MEM(t.data, a, 16);
    ingot_file_close(f);
}

/* ---------------------------------------------------------------------------------------------
 * Byte-exact rewrite and round trips
 * ------------------------------------------------------------------------------------------- */

TEST(test_burnpack_rewrite_byte_exact)
{
    for (size_t k = 0; k < N_FIX; k++) {
        char path[512];
        size_t n, m = 0;
        snprintf(path, sizeof path, FIX "/%s", fixtures[k].file);
        uint8_t *orig = test_read_file(path, &n), *out = NULL;
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
        int notices = 0;
        ingot_status st = rewrite(f, NULL, &out, &m, &notices, &e);
        CHECK(st == INGOT_OK, "%s: %s", fixtures[k].file, e.msg);
        CHECK(notices == 0, "%s: %d notices", fixtures[k].file, notices);
        CHECK(st == INGOT_OK && m == n && memcmp(out, orig, n) == 0,
              "%s: rewrite differs (%zu vs %zu bytes)", fixtures[k].file, m, n);
        ingot_file_close(f);
        free(orig);
        free(out);
    }
}

/* burnpack -> .ingot -> burnpack, byte for byte (the reserved keys carry what .ingot cannot). */
TEST(test_burnpack_roundtrip_through_ingot)
{
    for (size_t k = 0; k < N_FIX; k++) {
        char path[512];
        size_t n, m = 0, nn = 0;
        snprintf(path, sizeof path, FIX "/%s", fixtures[k].file);
        uint8_t *orig = test_read_file(path, &n), *out = NULL;
        ingot_file *f, *g;
        ingot_error e;
        ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
        ingot_writer *w;
        ASSERT_OK(ingot_writer_new(NULL, &w, &e));
        ASSERT_OK(copy_into(w, f, &e));
        void *native;
        ASSERT_OK(ingot_writer_begin_mem(w, &e));
        ASSERT_OK(ingot_writer_commit_mem(w, &native, &nn, &e));
        ingot_writer_free(w);
        ingot_file_close(f);
        ASSERT_OK(ingot_file_open_buffer(native, nn, NULL, &g, &e));
        ASSERT_STR(ingot_file_format(g), "ingot");
        ingot_status st = rewrite(g, NULL, &out, &m, NULL, &e);
        CHECK(st == INGOT_OK && m == n && memcmp(out, orig, n) == 0,
              "%s: bpk -> ingot -> bpk differs (%s)", fixtures[k].file, e.msg);
        ingot_file_close(g);
        ingot_writer_free_mem(NULL, native, nn);
        free(orig);
        free(out);
    }
}

/* Builds a file with every Bool variant, Flex32 and a QFloat tensor through the reserved keys,
 * reads it back, rewrites it byte for byte. */
static uint8_t *special_file(const char *layout, const char *qjson, size_t *n, ingot_status *st,
                             int *notices)
{
    ingot_writer_opts wo = {0};
    wo.format = "burnpack";
    ingot_writer *w;
    ingot_error e;
    *st = ingot_writer_new(&wo, &w, &e);
    if (*st) return NULL;
    ingot_writer_set_notice(w, notice_count, notices);
    if (layout) ingot_writer_set_option(w, "layout", layout, NULL);
    static const uint8_t b1[3] = {1, 0, 1}, q[12] = {1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 128, 63};
    static const uint32_t b32[2] = {1, 0};
    static const float fx[2] = {1.5f, -2};
    uint64_t s3[1] = {3}, s2[1] = {2}, s12[1] = {12}, qshape[2] = {2, 4};
    ingot_tensor_opts pid = {true, 0xfedcba9876543210ull};
    ingot_writer_add_tensor(w, "b.native", INGOT_DTYPE_BOOL, 1, s3, &pid, b1, NULL);
    ingot_writer_add_tensor(w, "b.u8", INGOT_DTYPE_BOOL, 1, s3, NULL, b1, NULL);
    ingot_writer_add_tensor(w, "b.u32", INGOT_DTYPE_U32, 1, s2, NULL, b32, NULL);
    ingot_writer_add_tensor(w, "flex", INGOT_DTYPE_F32, 1, s2, NULL, fx, NULL);
    ingot_writer_add_tensor(w, "q", INGOT_DTYPE_U8, 1, s12, NULL, q, NULL);
    ingot_writer_set_string(w, "ingot.burnpack.dtype.b.u8", "{\"Bool\":\"U8\"}");
    ingot_writer_set_string(w, "ingot.burnpack.dtype.b.u32", "{\"Bool\": \"U32\"}");
    ingot_writer_set_string(w, "ingot.burnpack.dtype.flex", "\"Flex32\"");
    ingot_writer_set_string(w, "ingot.burnpack.dtype.q", qjson);
    ingot_writer_set_array(w, "ingot.burnpack.shape.q", INGOT_META_U64, qshape, 2);
    ingot_writer_set_u32(w, "epochs", 7);
    ingot_writer_set_string(w, "note", "quoted \"x\"");
    void *mem = NULL;
    uint8_t *out = NULL;
    *st = ingot_writer_begin_mem(w, &e);
    if (*st == INGOT_OK) *st = ingot_writer_commit_mem(w, &mem, n, &e);
    if (*st == INGOT_OK) {
        out = malloc(*n);
        memcpy(out, mem, *n);
        ingot_writer_free_mem(NULL, mem, *n);
    }
    ingot_writer_free(w);
    return out;
}

#define QJSON                                                                                      \
    "{\"QFloat\":{\"value\":\"Q8F\",\"param\":\"F32\",\"store\":{\"PackedU32\":0},\"level\":"   \
    "\"Tensor\",\"mode\":\"Symmetric\"}}"

TEST(test_burnpack_special_dtypes)
{
    size_t n, m;
    ingot_status st;
    int notices = 0;
    uint8_t *b = special_file(NULL, QJSON, &n, &st, &notices);
    ASSERT_OK(st);
    ASSERT_EQ(notices, 1); /* epochs: u32 -> "7" */
    /* the default QFloat scheme bytes of the spec §6 example appear verbatim */
    static const uint8_t qcbor[] = {
        0xa1, 0x66, 'Q', 'F', 'l', 'o', 'a', 't', 0xa5, 0x65, 'v', 'a', 'l', 'u', 'e', 0x63, 'Q',
        '8', 'F', 0x65, 'p', 'a', 'r', 'a', 'm', 0x63, 'F', '3', '2', 0x65, 's', 't', 'o', 'r',
        'e', 0xa1, 0x69, 'P', 'a', 'c', 'k', 'e', 'd', 'U', '3', '2', 0x00, 0x65, 'l', 'e', 'v',
        'e', 'l', 0x66, 'T', 'e', 'n', 's', 'o', 'r', 0x64, 'm', 'o', 'd', 'e', 0x69, 'S', 'y',
        'm', 'm', 'e', 't', 'r', 'i', 'c'};
    ASSERT_TRUE(find_bytes(b, n, qcbor, sizeof qcbor) != NULL);
    ASSERT_TRUE(find_bytes(b, n, "\xa1\x64" "Bool" "\x62" "U8", 8) != NULL);
    ASSERT_TRUE(find_bytes(b, n, "\x66" "Flex32", 7) != NULL);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(open_buf(b, n, &f, &e));
    ASSERT_STR(ingot_file_version(f), "0.21");
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "b.native", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_BOOL);
    ASSERT_U64(t.param_id, 0xfedcba9876543210ull);
    ASSERT_OK(ingot_file_tensor_find(f, "b.u8", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_BOOL);
    ASSERT_OK(ingot_file_tensor_find(f, "b.u32", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_U32);
    ASSERT_U64(t.nbytes, 8);
    ASSERT_OK(ingot_file_tensor_find(f, "flex", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_F32);
    ASSERT_OK(ingot_file_tensor_find(f, "q", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_U8);
    ASSERT_EQ(t.rank, 1);
    ASSERT_U64(t.shape[0], 12);
    const char *s;
    size_t len;
    ASSERT_OK(ingot_file_meta_get_string(f, "ingot.burnpack.dtype.q", &s, &len));
    ASSERT_TRUE(len == strlen(QJSON) && memcmp(s, QJSON, len) == 0);
    ASSERT_OK(ingot_file_meta_get_string(f, "ingot.burnpack.dtype.b.u32", &s, &len));
    ASSERT_TRUE(len == 14 && memcmp(s, "{\"Bool\":\"U32\"}", 14) == 0);
    ASSERT_OK(ingot_file_meta_get_string(f, "ingot.burnpack.dtype.flex", &s, &len));
    ASSERT_TRUE(len == 8 && memcmp(s, "\"Flex32\"", 8) == 0);
    ASSERT_OK(ingot_file_meta_get_string(f, "epochs", &s, &len));
    ASSERT_TRUE(len == 1 && s[0] == '7');
    uint64_t cnt, qs[2];
    ASSERT_OK(ingot_file_meta_get_array(f, "ingot.burnpack.shape.q", INGOT_META_U64, &cnt));
    ASSERT_EQ(cnt, 2);
    ingot_meta_info mi;
    ASSERT_OK(ingot_file_meta_find(f, "ingot.burnpack.shape.q", &mi));
    ASSERT_OK(ingot_file_meta_array_read(f, mi.index, INGOT_META_U64, 0, 2, qs));
    ASSERT_U64(qs[0], 2);
    ASSERT_U64(qs[1], 4);
    ASSERT_ST(ingot_file_meta_array_read(f, mi.index, INGOT_META_U32, 0, 2, qs),
              INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_array_read(f, mi.index, INGOT_META_U64, 1, 2, qs), INGOT_RANGE);
    ASSERT_ST(ingot_file_meta_get_array(f, "ingot.burnpack.dtype.q", INGOT_META_U64, &cnt),
              INGOT_WRONG_TYPE);
    /* rewrite byte for byte, directly and through .ingot */
    uint8_t *c = NULL;
    ASSERT_OK(rewrite(f, NULL, &c, &m, NULL, &e));
    CHECK(m == n && memcmp(b, c, n) == 0, "special rewrite differs");
    free(c);
    c = NULL;
    ingot_writer *w;
    void *native;
    size_t nn;
    ASSERT_OK(ingot_writer_new(NULL, &w, &e));
    ASSERT_OK(copy_into(w, f, &e));
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    ASSERT_OK(ingot_writer_commit_mem(w, &native, &nn, &e));
    ingot_writer_free(w);
    ingot_file *g;
    ASSERT_OK(ingot_file_open_buffer(native, nn, NULL, &g, &e));
    ASSERT_OK(rewrite(g, NULL, &c, &m, NULL, &e));
    CHECK(m == n && memcmp(b, c, n) == 0, "special via .ingot differs");
    ingot_file_close(g);
    ingot_writer_free_mem(NULL, native, nn);
    ingot_file_close(f);
    free(c);
    free(b);
    /* Bool(U8)/Bool(U32) do not exist before 0.21 */
    b = special_file("0.20", QJSON, &n, &st, &notices);
    ASSERT_ST(st, INGOT_UNSUPPORTED);
    free(b);
}

TEST(test_burnpack_layout_option)
{
    ingot_file *f, *g;
    ingot_error e;
    uint8_t *out = NULL, *back = NULL;
    size_t n, m;
    /* b (0.21, Bool(Native)) written as 0.20: text Bool, same offsets */
    ASSERT_OK(ingot_file_open(FIX "/synthetic/b_multi_dtype_v021.bpk", NULL, &f, &e));
    ASSERT_OK(rewrite(f, "0.20", &out, &n, NULL, &e));
    ASSERT_TRUE(find_bytes(out, n, "\x64" "Bool" "\x65" "shape", 11) != NULL);
    ASSERT_OK(open_buf(out, n, &g, &e));
    ASSERT_STR(ingot_file_version(g), "0.20");
    ingot_meta_info mi;
    ASSERT_OK(ingot_file_meta_find(g, "ingot.burnpack.layout", &mi));
    /* and back to 0.21 by option: the original bytes */
    ASSERT_OK(rewrite(g, "0.21", &back, &m, NULL, &e));
    size_t on;
    uint8_t *orig = test_read_file(FIX "/synthetic/b_multi_dtype_v021.bpk", &on);
    CHECK(m == on && memcmp(back, orig, on) == 0, "0.21 -> 0.20 -> 0.21 differs");
    ingot_file_close(g);
    free(out);
    free(back);
    back = NULL;
    /* 0.19: unaligned, packed; read back as 0.19 with UNALIGNED views */
    ASSERT_OK(rewrite(f, "0.19", &out, &n, NULL, &e));
    ASSERT_OK(open_buf(out, n, &g, &e));
    ASSERT_STR(ingot_file_version(g), "0.19");
    ASSERT_U64(ingot_file_alignment(g), 1);
    ingot_tensor_info t;
    char hex[65];
    for (uint64_t i = 0; i < ingot_file_tensor_count(g); i++) {
        ingot_file_tensor_at(g, i, &t);
        CHECK(!(t.offset % ingot_dtype_block_bytes(t.dtype)) == !(t.flags & INGOT_TENSOR_UNALIGNED),
              "%s flag", t.name);
        sha_of_tensor(g, i, hex);
        CHECK(strcmp(hex, b_exp[i].sha) == 0, "0.19 copy of %s", t.name);
    }
    /* 0.19 -> 0.19 byte-exact through the reserved layout key, no option */
    ASSERT_OK(rewrite(g, NULL, &back, &m, NULL, &e));
    CHECK(m == n && memcmp(back, out, n) == 0, "0.19 rewrite differs");
    ingot_file_close(g);
    ingot_file_close(f);
    free(out);
    free(back);
    free(orig);
}

/* Packed 0.19 data: F32 at U+1 and U+7 cannot both be 4-aligned; the copy path still works. */
TEST(test_burnpack_unaligned_views)
{
    ingot_writer_opts wo = {0};
    wo.format = "burnpack";
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    ASSERT_OK(ingot_writer_set_option(w, "layout", "0.19", &e));
    uint64_t s1[1] = {1}, s2[1] = {2};
    const float one = 1.5f, two = -3.25f;
    ASSERT_OK(ingot_writer_add_tensor(w, "a", INGOT_DTYPE_U8, 1, s1, NULL, "\x05", &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "f1", INGOT_DTYPE_F32, 1, s1, NULL, &one, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "b", INGOT_DTYPE_U8, 1, s2, NULL, "\x06\x07", &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "f2", INGOT_DTYPE_F32, 1, s1, NULL, &two, &e));
    void *mem;
    size_t n;
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    ASSERT_OK(ingot_writer_commit_mem(w, &mem, &n, &e));
    ingot_writer_free(w);
    ingot_file *f;
    ASSERT_OK(open_buf(mem, n, &f, &e));
    ASSERT_STR(ingot_file_version(f), "0.19");
    int unaligned = 0;
    const float want[2] = {1.5f, -3.25f};
    for (int k = 0; k < 2; k++) {
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_find(f, k ? "f2" : "f1", &t));
        unaligned += (t.flags & INGOT_TENSOR_UNALIGNED) != 0;
        CHECK(!(t.offset % 4) == !(t.flags & INGOT_TENSOR_UNALIGNED), "flag of %s", t.name);
        float got;
        ASSERT_OK(ingot_file_tensor_copy(f, t.index, &got, 4, &e));
        CHECK(got == want[k], "value of %s", t.name);
    }
    ASSERT_TRUE(unaligned >= 1);
    ASSERT_U64(n, 10 + (n - 10 - 8) + 8);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, n);
}

TEST(test_burnpack_writer_refusals)
{
    ingot_writer_opts wo = {0};
    wo.format = "burnpack";
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    ASSERT_STR(ingot_writer_format_for_path("model.bpk"), "burnpack");
    ASSERT_ST(ingot_writer_set_option(w, "layout", "0.22", &e), INGOT_BAD_METADATA);
    ASSERT_ST(ingot_writer_set_option(w, "align", "64", &e), INGOT_UNSUPPORTED);
    uint64_t s[1] = {4};
    uint8_t d[4] = {0};
    /* dtypes Burnpack cannot hold: refused at add_tensor, naming the tensor */
    ingot_dtype no[] = {INGOT_DTYPE_F8_E4M3, INGOT_DTYPE_C64, INGOT_DTYPE_Q8_0};
    uint64_t s32[1] = {32};
    static uint8_t d34[256];
    for (size_t k = 0; k < 3; k++) {
        ingot_writer *w2;
        ASSERT_OK(ingot_writer_new(&wo, &w2, &e));
        ASSERT_ST(ingot_writer_add_tensor(w2, "odd", no[k], 1, s32, NULL, d34, &e),
                  INGOT_UNSUPPORTED);
        ASSERT_STR(e.where, "odd");
        ASSERT_OK(ingot_writer_begin_mem(w2, &e)); /* nothing was added */
        ingot_writer_free(w2);
    }
    ASSERT_OK(ingot_writer_add_tensor(w, "u", INGOT_DTYPE_U8, 1, s, NULL, d, &e));
    /* a dtype key that does not match the tensor */
    ingot_writer_set_string(w, "ingot.burnpack.dtype.u", "\"F32\"");
    ASSERT_ST(ingot_writer_begin_mem(w, &e), INGOT_BAD_METADATA);
    ingot_writer_free(w);
    /* QFloat without its shape key; malformed JSON */
    const char *bad_json[] = {QJSON, "{\"QFloat\":", "\"Bool", "{\"Bool\":\"U16\"}", "[1,2]", "-1"};
    for (size_t k = 0; k < sizeof bad_json / sizeof bad_json[0]; k++) {
        ASSERT_OK(ingot_writer_new(&wo, &w, &e));
        ASSERT_OK(ingot_writer_add_tensor(w, "u", INGOT_DTYPE_U8, 1, s, NULL, d, &e));
        ingot_writer_set_string(w, "ingot.burnpack.dtype.u", bad_json[k]);
        CHECK(ingot_writer_begin_mem(w, &e) == INGOT_BAD_METADATA, "json %s", bad_json[k]);
        ingot_writer_free(w);
    }
    /* reserved keys naming no tensor are dropped with a notice */
    int notices = 0;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    ingot_writer_set_notice(w, notice_count, &notices);
    ingot_writer_set_string(w, "ingot.burnpack.dtype.ghost", "\"F32\"");
    ingot_writer_set_string(w, "ingot.burnpack.other", "x");
    ingot_writer_set_f64(w, "lr", 0.1);
    ingot_writer_set_array(w, "ids", INGOT_META_I16, (int16_t[]){-1, 2}, 2);
    ingot_writer_set_bytes(w, "blob", "\x01\xff", 2);
    void *mem;
    size_t n;
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    ASSERT_OK(ingot_writer_commit_mem(w, &mem, &n, &e));
    ASSERT_EQ(notices, 5);
    ingot_file *f;
    ASSERT_OK(open_buf(mem, n, &f, &e));
    const char *sv;
    size_t len;
    ASSERT_OK(ingot_file_meta_get_string(f, "lr", &sv, &len));
    ASSERT_TRUE(len == 3 && memcmp(sv, "0.1", 3) == 0);
    ASSERT_OK(ingot_file_meta_get_string(f, "ids", &sv, &len));
    ASSERT_TRUE(len == 6 && memcmp(sv, "[-1,2]", 6) == 0);
    ASSERT_OK(ingot_file_meta_get_string(f, "blob", &sv, &len));
    ASSERT_TRUE(len == 4 && memcmp(sv, "01ff", 4) == 0);
    ASSERT_EQ(ingot_file_meta_count(f), 3);
    ASSERT_STR(ingot_file_version(f), "0.20-0.21");
    ASSERT_U64(n, 256);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, n);
    ingot_writer_free(w);
}

/* The empty pack of the spec §2 and a zero-length tensor at the end (trailing padding). */
TEST(test_burnpack_writer_edge_layouts)
{
    ingot_writer_opts wo = {0};
    wo.format = "burnpack";
    ingot_writer *w;
    ingot_error e;
    void *mem;
    size_t n;
    uint64_t s0[1] = {0}, s5[1] = {5};
    uint8_t d[5] = {1, 2, 3, 4, 5};
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "a", INGOT_DTYPE_U8, 1, s5, NULL, d, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "empty", INGOT_DTYPE_F32, 1, s0, NULL, d, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "scalar", INGOT_DTYPE_U8, 0, NULL, NULL, d, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "empty2", INGOT_DTYPE_F32, 1, s0, NULL, d, &e));
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    ASSERT_OK(ingot_writer_commit_mem(w, &mem, &n, &e));
    ingot_writer_free(w);
    ingot_file *f;
    ASSERT_OK(open_buf(mem, n, &f, &e));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "scalar", &t));
    ASSERT_EQ(t.rank, 0);
    ASSERT_U64(t.nelem, 1);
    ASSERT_OK(ingot_file_tensor_find(f, "empty2", &t));
    ASSERT_U64(t.offset + 0, n); /* ceil(257, 256) = 512 past the data start: trailing zeros */
    uint8_t *out;
    size_t m;
    ASSERT_OK(rewrite(f, NULL, &out, &m, NULL, &e));
    CHECK(m == n && memcmp(out, mem, n) == 0, "edge rewrite differs");
    free(out);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, n);
}

/* ---------------------------------------------------------------------------------------------
 * Version discrimination
 * ------------------------------------------------------------------------------------------- */

static ingot_status open_version(const uint8_t *b, size_t n, char ver[16], ingot_error *e)
{
    ingot_file *f;
    ingot_status st = open_buf(b, n, &f, e);
    ver[0] = 0;
    if (st == INGOT_OK) {
        snprintf(ver, 16, "%s", ingot_file_version(f));
        ingot_file_close(f);
    }
    return st;
}

TEST(test_burnpack_version_discrimination)
{
    char ver[16];
    ingot_error e;
    size_t n;
    uint64_t sh[1] = {16};
    /* 0.19: packed right after the metadata */
    uint8_t *b = one("U8", 1, sh, 0, 16, false, 16, &n);
    ASSERT_OK(open_version(b, n, ver, &e));
    ASSERT_STR(ver, "0.19");
    /* the same bytes plus A-U trailing bytes: the aligned reading finds non-zero padding */
    size_t u = n - 16, a = (u + 255) / 256 * 256;
    uint8_t *b2 = calloc(1, a + 16);
    memcpy(b2, b, n);
    ASSERT_ST(open_version(b2, a + 16, ver, &e), INGOT_BAD_LAYOUT);
    ASSERT_U64(e.offset, u);
    free(b2);
    /* one byte more or less than either reading */
    ASSERT_ST(open_version(b, n - 1, ver, &e), INGOT_TRUNCATED);
    b2 = calloc(1, n + 1);
    memcpy(b2, b, n);
    ASSERT_ST(open_version(b2, n + 1, ver, &e), INGOT_TRUNCATED); /* neither 0.19 nor 0.20+ */
    free(b2);
    free(b);
    /* aligned, text Bool: 0.20; map Bool: 0.21 */
    b = one("Bool", 1, sh, 0, 16, true, 16, &n);
    ASSERT_OK(open_version(b, n, ver, &e));
    ASSERT_STR(ver, "0.20");
    free(b);
    b = one("Bool", 1, sh, 0, 16, false, 16, &n);
    ASSERT_OK(open_version(b, n, ver, &e));
    ASSERT_STR(ver, "0.19");
    free(b);
    vec raw = {0}, m = {0};
    head(&raw, 5, 1), text(&raw, "Bool"), text(&raw, "Native");
    head(&m, 5, 1), text(&m, "tensors"), head(&m, 5, 1);
    desc(&m, "x", NULL, &raw, 1, sh, 0, 16, false, 0);
    b = mkfile(&m, true, 16, 1, &n);
    ASSERT_OK(open_version(b, n, ver, &e));
    ASSERT_STR(ver, "0.21");
    free(b);
    /* map Bool in the unaligned layout: contradiction */
    b = mkfile(&m, false, 16, 1, &n);
    ASSERT_ST(open_version(b, n, ver, &e), INGOT_BAD_VERSION);
    ASSERT_STR(e.where, "x");
    free(b);
    free(m.p);
    /* text and map Bool in one file */
    m = (vec){0};
    head(&m, 5, 1), text(&m, "tensors"), head(&m, 5, 2);
    desc(&m, "a", "Bool", NULL, 1, sh, 0, 16, false, 0);
    desc(&m, "b", NULL, &raw, 1, sh, 256, 272, false, 0);
    b = mkfile(&m, true, 272, 0, &n);
    ASSERT_ST(open_version(b, n, ver, &e), INGOT_BAD_VERSION);
    free(b);
    free(m.p);
    free(raw.p);
    /* QFloat store "U32" (0.19) in an aligned file; PackedU32 (0.20+) in a packed one */
    for (int k = 0; k < 2; k++) {
        raw = (vec){0};
        head(&raw, 5, 1), text(&raw, "QFloat"), head(&raw, 5, 5);
        text(&raw, "value"), text(&raw, "Q8S"), text(&raw, "param"), text(&raw, "F32");
        text(&raw, "store");
        if (k == 0) text(&raw, "U32");
        else head(&raw, 5, 1), text(&raw, "PackedU32"), head(&raw, 0, 0);
        text(&raw, "level"), text(&raw, "Tensor"), text(&raw, "mode"), text(&raw, "Symmetric");
        m = (vec){0};
        head(&m, 5, 1), text(&m, "tensors"), head(&m, 5, 1);
        desc(&m, "q", NULL, &raw, 1, sh, 0, 16, false, 0);
        b = mkfile(&m, k == 0, 16, 1, &n);
        ASSERT_ST(open_version(b, n, ver, &e), INGOT_BAD_VERSION);
        free(b);
        b = mkfile(&m, k == 1, 16, 1, &n);
        ASSERT_OK(open_version(b, n, ver, &e));
        ASSERT_STR(ver, k == 0 ? "0.19" : "0.20-0.21");
        free(b);
        free(m.p);
        free(raw.p);
    }
    /* 10 + metadata_size a multiple of 256: both readings agree on the data start */
    m = (vec){0};
    head(&m, 5, 2), text(&m, "tensors"), head(&m, 5, 1);
    desc(&m, "x", "U8", NULL, 1, sh, 0, 16, false, 0);
    text(&m, "metadata"), head(&m, 5, 1), text(&m, "k");
    size_t pad = 246 - m.n - 2; /* value head 0x78 nn */
    head(&m, 3, pad);
    for (size_t k = 0; k < pad; k++) put1(&m, 'v');
    ASSERT_EQ(m.n, 246);
    b = mkfile(&m, true, 16, 1, &n);
    ASSERT_OK(open_version(b, n, ver, &e));
    ASSERT_STR(ver, "0.19-0.21");
    free(b);
    free(m.p);
    /* aligned length but packed offsets: neither writer made it */
    m = (vec){0};
    head(&m, 5, 1), text(&m, "tensors"), head(&m, 5, 2);
    desc(&m, "a", "U8", NULL, 1, sh, 0, 16, false, 0);
    desc(&m, "b", "U8", NULL, 1, sh, 16, 32, false, 0);
    b = mkfile(&m, true, 32, 1, &n);
    ASSERT_ST(open_version(b, n, ver, &e), INGOT_BAD_LAYOUT);
    ASSERT_STR(e.where, "b");
    free(b);
    free(m.p);
}

/* The one ambiguity the length rule leaves (spec §1): a 0.20+ file cut exactly at
 * 10 + metadata_size + max(end) is a valid 0.19 file. It reads as 0.19 (documented). */
TEST(test_burnpack_truncated_at_legacy_length)
{
    size_t n;
    uint8_t *b = test_read_file(FIX "/synthetic/a_single_f32.bpk", &n);
    char ver[16];
    ingot_error e;
    ASSERT_OK(open_version(b, 10 + 98 + 16, ver, &e));
    ASSERT_STR(ver, "0.19");
    free(b);
}

/* ---------------------------------------------------------------------------------------------
 * Malformed catalogue (RELIABILITY.md §1)
 * ------------------------------------------------------------------------------------------- */

TEST(test_burnpack_truncation_every_byte)
{
    const char *files[] = {"synthetic/a_single_f32.bpk", "synthetic/b_multi_dtype_v021.bpk",
                           "synthetic/c_empty.bpk", "synthetic/d_bool_v020.bpk"};
    for (size_t k = 0; k < 4; k++) {
        char path[512];
        size_t n;
        snprintf(path, sizeof path, FIX "/%s", files[k]);
        uint8_t *b = test_read_file(path, &n);
        uint32_t msz = b[6] | b[7] << 8 | b[8] << 16 | (uint32_t)b[9] << 24;
        for (size_t cut = 0; cut < n; cut++) {
            ingot_error e;
            uint8_t *c = malloc(cut ? cut : 1);
            memcpy(c, b, cut);
            ingot_status st = try_open(c, cut, &e);
            /* documented: a cut at exactly U + max(end) with packable offsets reads as 0.19 */
            size_t legacy = 10 + msz + (k == 0 ? 16 : k == 3 ? 2 : 0);
            bool amb = (k == 0 || k == 3 || k == 2) && cut == legacy;
            if (amb) CHECK(st == INGOT_OK, "%s cut %zu: %s", files[k], cut, ingot_status_name(st));
            else CHECK(st == INGOT_TRUNCATED, "%s cut %zu: %s (%s)", files[k], cut,
                       ingot_status_name(st), e.msg);
            free(c);
        }
        free(b);
    }
}

/* Every single-byte change of the header and metadata: no crash, no leak, and a defined code. */
TEST(test_burnpack_byte_flips)
{
    size_t n;
    uint8_t *b = test_read_file(FIX "/synthetic/b_multi_dtype_v021.bpk", &n);
    int ok = 0, bad = 0;
    for (size_t i = 0; i < 10 + 418; i++)
        for (int v = 0; v < 3; v++) {
            uint8_t *c = malloc(n);
            memcpy(c, b, n);
            c[i] = v == 0 ? (uint8_t)~c[i] : v == 1 ? (uint8_t)(c[i] + 1) : 0xff;
            ingot_error e;
            ingot_status st = try_open(c, n, &e);
            CHECK((int)st >= 0 && st <= INGOT_BAD_FLAGS, "flip %zu: leak or bad status", i);
            if (st == INGOT_OK) ok++;
            else bad++;
            free(c);
        }
    CHECK(bad > ok, "flips: %d accepted, %d rejected", ok, bad);
    free(b);
}

typedef struct {
    const char *what;
    ingot_status want;
    const char *where; /* expected e.where prefix or NULL */
} bad_case;

/* Builds metadata from a tiny script per case; the data is 16 bytes of 1s, aligned. */
static uint8_t *bad_file(int k, size_t *n, bad_case *bc)
{
    vec m = {0};
    uint64_t sh[INGOT_MAX_RANK + 1] = {16}, big[2] = {UINT64_MAX / 2, 4};
    for (int d = 1; d <= INGOT_MAX_RANK; d++) sh[d] = 1;
    bool aligned = true;
    size_t data = 16;
    uint8_t fill = 1;
#define START_T(cnt) head(&m, 5, 1), text(&m, "tensors"), head(&m, 5, cnt)
    switch (k) {
    case 0: *bc = (bad_case){"tensors is an array", INGOT_WRONG_TYPE, "tensors"};
        head(&m, 5, 1), text(&m, "tensors"), head(&m, 4, 0); break;
    case 1: *bc = (bad_case){"top level is an array", INGOT_WRONG_TYPE, NULL};
        head(&m, 4, 0); break;
    case 2: *bc = (bad_case){"descriptor is an array", INGOT_WRONG_TYPE, "x"};
        START_T(1), text(&m, "x"), head(&m, 4, 0); break;
    case 3: *bc = (bad_case){"shape is a map", INGOT_WRONG_TYPE, "x"};
        START_T(1), text(&m, "x"), head(&m, 5, 3), text(&m, "dtype"), text(&m, "U8"),
            text(&m, "shape"), head(&m, 5, 0); break;
    case 4: *bc = (bad_case){"dtype is a uint", INGOT_WRONG_TYPE, "x"};
        START_T(1), text(&m, "x"), head(&m, 5, 1), text(&m, "dtype"), head(&m, 0, 3); break;
    case 5: *bc = (bad_case){"param_id is text", INGOT_WRONG_TYPE, "x"};
        START_T(1), text(&m, "x"), head(&m, 5, 1), text(&m, "param_id"), text(&m, "7"); break;
    case 6: *bc = (bad_case){"metadata value is a uint", INGOT_WRONG_TYPE, "k"};
        head(&m, 5, 2), text(&m, "tensors"), head(&m, 5, 0), text(&m, "metadata"),
            head(&m, 5, 1), text(&m, "k"), head(&m, 0, 1); data = 0; break;
    case 7: *bc = (bad_case){"lower-case dtype", INGOT_BAD_TYPE, "x"};
        START_T(1), desc(&m, "x", "u8", NULL, 1, sh, 0, 16, 0, 0); break;
    case 8: *bc = (bad_case){"rank 65", INGOT_BAD_NDIMS, "x"};
        START_T(1), desc(&m, "x", "U8", NULL, INGOT_MAX_RANK + 1, sh, 0, 16, 0, 0); break;
    case 9: *bc = (bad_case){"shape product overflows", INGOT_BAD_SHAPE, "x"};
        START_T(1), desc(&m, "x", "U8", NULL, 2, big, 0, 16, 0, 0); break;
    case 10: *bc = (bad_case){"size != shape x dtype", INGOT_BAD_SIZE, "x"};
        START_T(1), desc(&m, "x", "F32", NULL, 1, sh, 0, 16, 0, 0); break;
    case 11: *bc = (bad_case){"one data offset", INGOT_BAD_ARRAY, "x"};
        START_T(1), text(&m, "x"), head(&m, 5, 1), text(&m, "data_offsets"), head(&m, 4, 1),
            head(&m, 0, 0); break;
    case 12: *bc = (bad_case){"end before start", INGOT_BAD_LAYOUT, "x"};
        START_T(1), desc(&m, "x", "U8", NULL, 1, (uint64_t[]){0}, 16, 0, 0, 0); break;
    case 13: *bc = (bad_case){"data past the end", INGOT_TRUNCATED, "data"};
        START_T(1), desc(&m, "x", "U8", NULL, 1, (uint64_t[]){32}, 0, 32, 0, 0); break;
    case 14: *bc = (bad_case){"end offset 2^64-1", INGOT_BAD_LAYOUT, "data"};
        START_T(1), desc(&m, "x", "U8", NULL, 1, (uint64_t[]){5}, UINT64_MAX - 5, UINT64_MAX, 0, 0);
        break;
    case 15: *bc = (bad_case){"overlap", INGOT_BAD_LAYOUT, "b"};
        START_T(2), desc(&m, "a", "U8", NULL, 1, sh, 0, 16, 0, 0),
            desc(&m, "b", "U8", NULL, 1, (uint64_t[]){8}, 8, 16, 0, 0); break;
    case 16: *bc = (bad_case){"gap", INGOT_BAD_LAYOUT, "x"};
        START_T(1), desc(&m, "x", "U8", NULL, 1, sh, 256, 272, 0, 0); data = 272; break;
    case 17: *bc = (bad_case){"trailing bytes", INGOT_BAD_LAYOUT, "data"};
        START_T(1), desc(&m, "x", "U8", NULL, 1, sh, 0, 16, 0, 0); data = 17; break;
    case 18: *bc = (bad_case){"duplicate tensor", INGOT_DUPLICATE, "x"};
        START_T(2), desc(&m, "x", "U8", NULL, 1, sh, 0, 16, 0, 0),
            desc(&m, "x", "U8", NULL, 1, sh, 0, 16, 0, 0); break;
    case 19: *bc = (bad_case){"duplicate field", INGOT_DUPLICATE, "x"};
        START_T(1), text(&m, "x"), head(&m, 5, 2), text(&m, "dtype"), text(&m, "U8"),
            text(&m, "dtype"), text(&m, "U8"); break;
    case 20: *bc = (bad_case){"duplicate metadata key", INGOT_DUPLICATE, "k"};
        head(&m, 5, 2), text(&m, "tensors"), head(&m, 5, 0), text(&m, "metadata"),
            head(&m, 5, 2), text(&m, "k"), text(&m, "1"), text(&m, "k"), text(&m, "2");
        data = 0; break;
    case 21: *bc = (bad_case){"duplicate top-level key", INGOT_DUPLICATE, "tensors"};
        head(&m, 5, 2), text(&m, "tensors"), head(&m, 5, 0), text(&m, "tensors"),
            head(&m, 5, 0); data = 0; break;
    case 22: *bc = (bad_case){"empty name", INGOT_BAD_NAME, NULL};
        START_T(1), desc(&m, "", "U8", NULL, 1, sh, 0, 16, 0, 0); break;
    case 23: *bc = (bad_case){"name not UTF-8", INGOT_BAD_STRING, NULL};
        START_T(1), desc(&m, "\xff\xfe", "U8", NULL, 1, sh, 0, 16, 0, 0); break;
    case 24: *bc = (bad_case){"reserved user key", INGOT_UNSUPPORTED, "ingot.burnpack.layout"};
        head(&m, 5, 2), text(&m, "tensors"), head(&m, 5, 0), text(&m, "metadata"),
            head(&m, 5, 1), text(&m, "ingot.burnpack.layout"), text(&m, "0.19"); data = 0; break;
    case 25: *bc = (bad_case){"0.22 scalars", INGOT_UNSUPPORTED, "scalars"};
        head(&m, 5, 2), text(&m, "tensors"), head(&m, 5, 0), text(&m, "scalars"),
            head(&m, 5, 0); data = 0; break;
    case 26: *bc = (bad_case){"no tensors key", INGOT_BAD_METADATA, NULL};
        head(&m, 5, 0); data = 0; break;
    case 27: *bc = (bad_case){"no shape", INGOT_BAD_METADATA, "x"};
        START_T(1), text(&m, "x"), head(&m, 5, 2), text(&m, "dtype"), text(&m, "U8"),
            text(&m, "data_offsets"), head(&m, 4, 2), head(&m, 0, 0), head(&m, 0, 16); break;
    case 28: *bc = (bad_case){"text length 2^64-1", INGOT_BAD_STRING, NULL};
        START_T(1), put1(&m, 0x7b);
        for (int j = 0; j < 8; j++) put1(&m, 0xff);
        break;
    case 29: *bc = (bad_case){"array count 2^64-1", INGOT_BAD_ARRAY, "x"};
        START_T(1), text(&m, "x"), head(&m, 5, 1), text(&m, "shape"), put1(&m, 0x9b);
        for (int j = 0; j < 8; j++) put1(&m, 0xff);
        break;
    case 30: *bc = (bad_case){"tensor count 2^63", INGOT_BAD_COUNT, "tensors"};
        head(&m, 5, 1), text(&m, "tensors"), head(&m, 5, 1ull << 63); break;
    case 31: *bc = (bad_case){"nesting 200 deep", INGOT_BAD_ARRAY, NULL};
        head(&m, 5, 2), text(&m, "tensors"), head(&m, 5, 0), text(&m, "junk");
        for (int j = 0; j < 200; j++) head(&m, 4, 1);
        head(&m, 0, 0); data = 0; break;
    case 32: *bc = (bad_case){"reserved CBOR head", INGOT_BAD_METADATA, NULL};
        head(&m, 5, 1), text(&m, "tensors"), put1(&m, 0x1c); break;
    case 33: *bc = (bad_case){"bytes after the CBOR item", INGOT_BAD_HEADER_SIZE, NULL};
        head(&m, 5, 1), text(&m, "tensors"), head(&m, 5, 0), put1(&m, 0); data = 0; break;
    case 34: *bc = (bad_case){"Bool store U16", INGOT_BAD_TYPE, "x"};
        START_T(1), text(&m, "x"), head(&m, 5, 1), text(&m, "dtype"), head(&m, 5, 1),
            text(&m, "Bool"), text(&m, "U16"); break;
    case 35: *bc = (bad_case){"break outside a container", INGOT_BAD_METADATA, NULL};
        head(&m, 5, 1), text(&m, "tensors"), put1(&m, 0xff); break;
    case 36: *bc = (bad_case){"chunked tensor name", INGOT_UNSUPPORTED, NULL};
        START_T(1), put1(&m, 0x7f), text(&m, "x"), put1(&m, 0xff); break;
    default: free(m.p); return NULL;
    }
    uint8_t *b = mkfile(&m, aligned, data, fill, n);
    free(m.p);
    return b;
}

TEST(test_burnpack_malformed_catalogue)
{
    int cases = 0;
    for (int k = 0;; k++) {
        bad_case bc;
        size_t n;
        uint8_t *b = bad_file(k, &n, &bc);
        if (!b) break;
        ingot_error e;
        memset(&e, 0, sizeof e);
        ingot_status st = try_open(b, n, &e);
        CHECK(st == bc.want, "%s: got %s, want %s (%s)", bc.what, ingot_status_name(st),
              ingot_status_name(bc.want), e.msg);
        if (st != INGOT_OK && st == bc.want) {
            CHECK(e.code == st && e.msg[0], "%s: error record", bc.what);
            CHECK(!bc.where || strncmp(e.where, bc.where, strlen(bc.where)) == 0,
                  "%s: where '%s'", bc.what, e.where);
        }
        CHECK(last_counter.peak_single <= 4096 + 8 * n, "%s: allocation of %zu", bc.what,
              last_counter.peak_single);
        free(b);
        cases++;
    }
    ASSERT_EQ(cases, 37);
}

TEST(test_burnpack_header_rules)
{
    size_t n;
    uint8_t *b = test_read_file(FIX "/synthetic/a_single_f32.bpk", &n);
    ingot_error e;
    b[0] = 'M';
    ASSERT_ST(try_open(b, n, &e), INGOT_BAD_MAGIC);
    b[0] = 'N';
    b[4] = 2;
    ASSERT_ST(try_open(b, n, &e), INGOT_BAD_VERSION);
    b[4] = 0, b[5] = 1; /* byte-swapped 1 = 256 */
    ASSERT_ST(try_open(b, n, &e), INGOT_BAD_VERSION);
    b[5] = 0; /* version 0: Burn accepts it */
    ASSERT_OK(try_open(b, n, &e));
    b[4] = 1;
    uint8_t keep[4];
    memcpy(keep, b + 6, 4);
    memcpy(b + 6, "\xff\xff\xff\xff", 4);
    ASSERT_ST(try_open(b, n, &e), INGOT_BAD_HEADER_SIZE);
    memcpy(b + 6, "\x01\x00\x40\x06", 4); /* 100 MiB + 1 */
    ASSERT_ST(try_open(b, n, &e), INGOT_BAD_HEADER_SIZE);
    memcpy(b + 6, "\x00\x00\x40\x06", 4); /* exactly 100 MiB: past the file */
    ASSERT_ST(try_open(b, n, &e), INGOT_TRUNCATED);
    memcpy(b + 6, "\x61\x00\x00\x00", 4); /* one short: the item ends past metadata_size */
    ASSERT_ST(try_open(b, n, &e), INGOT_BAD_STRING);
    memcpy(b + 6, keep, 4);
    /* probe: content, not extension */
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, &e));
    ASSERT_STR(ingot_file_format(f), "burnpack");
    ingot_file_close(f);
    /* non-zero padding between tensors: open is fine, verify names the tensor */
    size_t bn;
    uint8_t *bb = test_read_file(FIX "/synthetic/b_multi_dtype_v021.bpk", &bn);
    bb[512 + 30] = 7;
    ASSERT_OK(open_buf(bb, bn, &f, &e));
    ASSERT_ST(ingot_file_verify(f, 1, &e), INGOT_BAD_LAYOUT);
    ASSERT_STR(e.where, "lin.weight");
    ASSERT_U64(e.offset, 542);
    ingot_file_close(f);
    free(bb);
    free(b);
}

/* More than 100,000 tensors: LIMIT (with enough bytes that the count itself is plausible). */
TEST(test_burnpack_tensor_limit)
{
    vec m = {0};
    head(&m, 5, 1), text(&m, "tensors"), head(&m, 5, 100001);
    size_t need = 200002 + 16;
    while (m.n < need) put1(&m, 0);
    size_t n;
    uint8_t *b = mkfile(&m, true, 0, 0, &n);
    ingot_error e;
    ASSERT_ST(try_open(b, n, &e), INGOT_LIMIT);
    free(b);
    free(m.p);
}

/* What Burn's decoder also accepts: indefinite lengths, long integer heads, tags, null param_id,
 * unknown keys, unsorted names. */
TEST(test_burnpack_lenient_cbor)
{
    vec m = {0};
    put1(&m, 0xbf); /* indefinite top map */
    text(&m, "extra"), put1(&m, 0x9f), head(&m, 0, 1), put1(&m, 0xff);
    text(&m, "tensors"), put1(&m, 0xbf);
    text(&m, "z"), head(&m, 5, 5), text(&m, "dtype"), text(&m, "U8"), text(&m, "shape"),
        put1(&m, 0x9f), put1(&m, 0x1b), put(&m, "\0\0\0\0\0\0\0\x10", 8), put1(&m, 0xff),
        text(&m, "data_offsets"), head(&m, 4, 2), put1(&m, 0xc1), head(&m, 0, 0), head(&m, 0, 16),
        text(&m, "param_id"), put1(&m, 0xf6), text(&m, "later"), head(&m, 5, 0);
    text(&m, "a"), head(&m, 5, 3), text(&m, "dtype"), text(&m, "U8"), text(&m, "shape"),
        head(&m, 4, 1), head(&m, 0, 16), text(&m, "data_offsets"), head(&m, 4, 2),
        head(&m, 0, 256), head(&m, 0, 272);
    put1(&m, 0xff);
    put1(&m, 0xff);
    size_t n;
    uint8_t *b = mkfile(&m, true, 272, 0, &n);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(open_buf(b, n, &f, &e));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_STR(t.name, "z");
    ASSERT_TRUE(!(t.flags & INGOT_TENSOR_HAS_PARAM_ID));
    ASSERT_OK(ingot_file_tensor_at(f, 1, &t));
    ASSERT_STR(t.name, "a");
    ingot_file_close(f);
    free(b);
    free(m.p);
}

/* ---------------------------------------------------------------------------------------------
 * CLI
 * ------------------------------------------------------------------------------------------- */

static int run(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    return pclose(p);
}

TEST(test_burnpack_cli)
{
    static char out[1 << 16];
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s info --json %s/real/mnist-inference-web_model.bpk", INGOT_CLI,
             FIX);
    ASSERT_EQ(run(cmd, out, sizeof out), 0);
    ASSERT_TRUE(strstr(out, "\"burnpack\"") != NULL);
    ASSERT_TRUE(strstr(out, "\"fc1.weight\"") != NULL);
    ASSERT_TRUE(strstr(out, "1730029982897944783") != NULL);
    snprintf(cmd, sizeof cmd, "%s verify %s/synthetic/b_multi_dtype_v021.bpk", INGOT_CLI, FIX);
    ASSERT_EQ(run(cmd, out, sizeof out), 0);
    const char *ing = INGOT_BINARY_DIR "/test_burnpack_cli.ingot";
    snprintf(cmd, sizeof cmd, "%s convert %s/synthetic/d_bool_v020.bpk %s 2>&1", INGOT_CLI, FIX,
             ing);
    ASSERT_EQ(run(cmd, out, sizeof out), 0);
    /* and back through the API (byte-exact) */
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open(ing, NULL, &f, &e));
    uint8_t *back;
    size_t n, on;
    ASSERT_OK(rewrite(f, NULL, &back, &n, NULL, &e));
    uint8_t *orig = test_read_file(FIX "/synthetic/d_bool_v020.bpk", &on);
    CHECK(n == on && memcmp(back, orig, n) == 0, "CLI .ingot -> bpk differs");
    ingot_file_close(f);
    free(back);
    /* and back through the CLI, which picks the writer from the extension */
    const char *bpk = INGOT_BINARY_DIR "/test_burnpack_cli.bpk";
    snprintf(cmd, sizeof cmd, "%s convert %s %s 2>&1", INGOT_CLI, ing, bpk);
    ASSERT_EQ(run(cmd, out, sizeof out), 0);
    back = test_read_file(bpk, &n);
    CHECK(back && n == on && memcmp(back, orig, n) == 0, "CLI .ingot -> .bpk differs");
    free(back);
    /* the layout option from the command line */
    snprintf(cmd, sizeof cmd, "%s convert %s/synthetic/b_multi_dtype_v021.bpk %s --opt layout=0.20 2>&1",
             INGOT_CLI, FIX, bpk);
    ASSERT_EQ(run(cmd, out, sizeof out), 0);
    ASSERT_OK(ingot_file_open(bpk, NULL, &f, &e));
    ASSERT_STR(ingot_file_version(f), "0.20");
    ingot_file_close(f);
    free(orig);
    unlink(ing);
    unlink(bpk);
}

RUN_TESTS(T(test_burnpack_fixtures_mmap), T(test_burnpack_fixtures_pread),
          T(test_burnpack_values), T(test_burnpack_rewrite_byte_exact),
          T(test_burnpack_roundtrip_through_ingot), T(test_burnpack_special_dtypes),
          T(test_burnpack_layout_option), T(test_burnpack_unaligned_views),
          T(test_burnpack_writer_refusals),
          T(test_burnpack_writer_edge_layouts), T(test_burnpack_version_discrimination),
          T(test_burnpack_truncated_at_legacy_length), T(test_burnpack_truncation_every_byte),
          T(test_burnpack_byte_flips), T(test_burnpack_malformed_catalogue),
          T(test_burnpack_header_rules), T(test_burnpack_tensor_limit),
          T(test_burnpack_lenient_cbor), T(test_burnpack_cli))
