/*
 * Property test of the internal 4-ary deadline heap (Sources/CTimerCore/heap.h)
 * against a reference model: a sorted array of (deadline, seq, slot).
 *
 * Random pushes, removals at arbitrary indexes (found through positions[]),
 * updates, pops of the top and heapify after bulk edits are applied to both;
 * after every operation the heap's top must be the model's minimum, and
 * periodically the full heap invariant and the position write-back are
 * checked. Deadlines are drawn mostly from tiny ranges so that ties are
 * frequent and the seq order (wrap-aware, see tk__heap_entry_before) decides.
 *
 * Usage: test_heap [seed] [ops]     (or env TK_SEED, TK_HEAP_OPS)
 */
#include "heap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------------
 * Random numbers (xoshiro256**, seeded through splitmix64)
 * ------------------------------------------------------------------------ */

typedef struct rng { uint64_t s[4]; } rng;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, n), n > 0. */
static uint64_t rng_below(rng *r, uint64_t n) { return rng_next(r) % n; }

/* ------------------------------------------------------------------------
 * Test bookkeeping
 * ------------------------------------------------------------------------ */

static uint64_t g_seed;
static int g_passed, g_failed;
static int g_case_failed;
static const char *g_case;
static uint64_t g_op;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "FAIL [%s] seed=%" PRIu64 " op=%" PRIu64 " %s:%d: ", \
                    g_case, g_seed, g_op, __FILE__, __LINE__);                \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
            g_case_failed = 1;                                                 \
            return -1;                                                         \
        }                                                                      \
    } while (0)

/* ------------------------------------------------------------------------
 * The model: entries kept sorted by tk__heap_entry_before.
 * ------------------------------------------------------------------------ */

typedef struct model {
    tk__heap_entry *v;
    uint32_t n, cap;
} model;

/* Index of the first model entry not before `e` (insertion point). */
static uint32_t model_lower_bound(const model *m, const tk__heap_entry *e) {
    uint32_t lo = 0, hi = m->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (tk__heap_entry_before(&m->v[mid], e)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void model_insert(model *m, tk__heap_entry e) {
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->v = realloc(m->v, m->cap * sizeof *m->v);
        if (!m->v) abort();
    }
    uint32_t at = model_lower_bound(m, &e);
    memmove(&m->v[at + 1], &m->v[at], (m->n - at) * sizeof *m->v);
    m->v[at] = e;
    m->n++;
}

/* Removes the entry of `slot` (linear search is fine for a model) and
 * returns it. */
static int model_remove_slot(model *m, uint32_t slot, tk__heap_entry *out) {
    for (uint32_t i = 0; i < m->n; i++) {
        if (m->v[i].slot == slot) {
            if (out) *out = m->v[i];
            memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof *m->v);
            m->n--;
            return 0;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------------
 * One randomized run
 * ------------------------------------------------------------------------ */

typedef struct config {
    const char *name;
    uint32_t max_slots;     /* slot numbers are below this */
    uint32_t seq_start;     /* first sequence number (near the wrap point) */
    int wide_deadlines;     /* 1: also draw from the whole int64 range */
} config;

typedef struct state {
    rng r;
    tk__heap heap;
    uint32_t *positions;
    model m;
    /* slots: free list and membership */
    uint8_t *in_heap;
    uint32_t *free_slots;
    uint32_t nfree;
    uint32_t seq;
    uint32_t target;  /* size the run drifts towards */
    const config *cfg;
    uint64_t checks_full;
} state;

static int64_t draw_deadline(state *st) {
    uint64_t k = rng_below(&st->r, 100);
    if (k < 45) return (int64_t)rng_below(&st->r, 8);          /* many ties */
    if (k < 70) return (int64_t)rng_below(&st->r, 64) - 32;    /* small, some negative */
    if (k < 85) return (int64_t)rng_below(&st->r, 1000000);
    if (!st->cfg->wide_deadlines) return (int64_t)rng_below(&st->r, 1u << 30);
    switch (rng_below(&st->r, 6)) {
    case 0: return INT64_MAX;
    case 1: return INT64_MIN;
    case 2: return INT64_MAX - (int64_t)rng_below(&st->r, 4);
    case 3: return INT64_MIN + (int64_t)rng_below(&st->r, 4);
    default: return (int64_t)rng_next(&st->r);
    }
}

/* Checks that the heap's top equals the model's minimum and the counts agree. */
static int check_top(state *st) {
    CHECK(st->heap.count == st->m.n, "count %u, model %u", st->heap.count, st->m.n);
    CHECK(st->heap.count <= st->heap.capacity, "count %u > capacity %u",
          st->heap.count, st->heap.capacity);
    const tk__heap_entry *top = tk__heap_top(&st->heap);
    if (st->m.n == 0) {
        CHECK(top == NULL, "top of empty heap is not NULL");
        return 0;
    }
    CHECK(top != NULL, "top is NULL with %u entries", st->m.n);
    CHECK(top == &st->heap.entries[0], "top is not entries[0]");
    const tk__heap_entry *want = &st->m.v[0];
    CHECK(top->deadline == want->deadline && top->seq == want->seq &&
              top->slot == want->slot,
          "top (%" PRId64 ", %u, slot %u), model min (%" PRId64 ", %u, slot %u)",
          top->deadline, top->seq, top->slot, want->deadline, want->seq, want->slot);
    CHECK(st->positions[top->slot] == 0, "positions[top slot %u] = %u", top->slot,
          st->positions[top->slot]);
    return 0;
}

/* Full check: heap order for every parent/child pair, positions for every
 * entry, and the heap holding exactly the model's entries. */
static int check_full(state *st) {
    const tk__heap *h = &st->heap;
    st->checks_full++;
    CHECK(h->count == st->m.n, "count %u, model %u", h->count, st->m.n);
    for (uint32_t i = 1; i < h->count; i++) {
        uint32_t parent = (i - 1) / TK__HEAP_ARITY;
        CHECK(!tk__heap_entry_before(&h->entries[i], &h->entries[parent]),
              "heap order broken: entries[%u] (%" PRId64 ", %u) before its parent "
              "entries[%u] (%" PRId64 ", %u)",
              i, h->entries[i].deadline, h->entries[i].seq, parent,
              h->entries[parent].deadline, h->entries[parent].seq);
    }
    for (uint32_t i = 0; i < h->count; i++) {
        uint32_t slot = h->entries[i].slot;
        CHECK(slot < st->cfg->max_slots, "entries[%u].slot %u out of range", i, slot);
        CHECK(st->in_heap[slot], "entries[%u] holds slot %u which is not in the heap",
              i, slot);
        CHECK(st->positions[slot] == i, "positions[%u] = %u, but it is at %u", slot,
              st->positions[slot], i);
    }
    /* Same multiset: every model entry is found, with equal fields, through
     * positions[] (slots are unique, so this with equal counts suffices). */
    for (uint32_t k = 0; k < st->m.n; k++) {
        const tk__heap_entry *e = &st->m.v[k];
        uint32_t i = st->positions[e->slot];
        CHECK(i < h->count, "model slot %u: position %u out of range", e->slot, i);
        CHECK(h->entries[i].slot == e->slot && h->entries[i].deadline == e->deadline &&
                  h->entries[i].seq == e->seq,
              "slot %u: heap has (%" PRId64 ", %u), model (%" PRId64 ", %u)", e->slot,
              h->entries[i].deadline, h->entries[i].seq, e->deadline, e->seq);
    }
    return 0;
}

static uint32_t take_slot(state *st) {
    uint32_t k = (uint32_t)rng_below(&st->r, st->nfree);
    uint32_t slot = st->free_slots[k];
    st->free_slots[k] = st->free_slots[--st->nfree];
    st->in_heap[slot] = 1;
    return slot;
}

static void give_slot(state *st, uint32_t slot) {
    st->in_heap[slot] = 0;
    st->free_slots[st->nfree++] = slot;
    /* A stale position must not matter: scribble over it. */
    st->positions[slot] = 0xdeadbeefu;
}

/* A random slot that is in the heap (requires a non-empty heap). */
static uint32_t random_live_slot(state *st) {
    return st->m.v[rng_below(&st->r, st->m.n)].slot;
}

static int op_push(state *st) {
    if (st->nfree == 0) return 0;
    uint32_t want = st->heap.count + 1;
    uint32_t old_cap = st->heap.capacity;
    CHECK(tk__heap_reserve(&st->heap, want) == 0, "reserve(%u) failed", want);
    CHECK(st->heap.capacity >= want, "reserve(%u) left capacity %u", want,
          st->heap.capacity);
    if (old_cap >= want) {
        CHECK(st->heap.capacity == old_cap, "reserve(%u) changed capacity %u -> %u "
              "although there was room", want, old_cap, st->heap.capacity);
    }
    tk__heap_entry e = {draw_deadline(st), st->seq++, take_slot(st)};
    tk__heap_push(&st->heap, st->positions, e);
    model_insert(&st->m, e);
    CHECK(st->positions[e.slot] < st->heap.count &&
              st->heap.entries[st->positions[e.slot]].slot == e.slot,
          "after push, positions[%u] = %u does not point at it", e.slot,
          st->positions[e.slot]);
    return 0;
}

static int op_remove_at(state *st, uint32_t index) {
    uint32_t slot = st->heap.entries[index].slot;
    tk__heap_entry gone;
    CHECK(model_remove_slot(&st->m, slot, &gone) == 0,
          "heap entries[%u] holds slot %u unknown to the model", index, slot);
    CHECK(gone.deadline == st->heap.entries[index].deadline &&
              gone.seq == st->heap.entries[index].seq,
          "slot %u: heap (%" PRId64 ", %u), model (%" PRId64 ", %u)", slot,
          st->heap.entries[index].deadline, st->heap.entries[index].seq,
          gone.deadline, gone.seq);
    tk__heap_remove(&st->heap, st->positions, index);
    give_slot(st, slot);
    return 0;
}

static int op_remove_random(state *st) {
    if (st->m.n == 0) return 0;
    uint32_t slot = random_live_slot(st);
    uint32_t index = st->positions[slot];
    CHECK(index < st->heap.count, "positions[%u] = %u, count %u", slot, index,
          st->heap.count);
    CHECK(st->heap.entries[index].slot == slot,
          "positions[%u] = %u but entries[%u].slot = %u", slot, index, index,
          st->heap.entries[index].slot);
    return op_remove_at(st, index);
}

static int op_pop(state *st) {
    if (st->m.n == 0) return 0;
    const tk__heap_entry *top = tk__heap_top(&st->heap);
    CHECK(top != NULL, "top is NULL with %u entries", st->m.n);
    CHECK(top->slot == st->m.v[0].slot, "top slot %u, model min slot %u", top->slot,
          st->m.v[0].slot);
    return op_remove_at(st, 0);
}

static int op_update(state *st) {
    if (st->m.n == 0) return 0;
    uint32_t slot = random_live_slot(st);
    uint32_t index = st->positions[slot];
    CHECK(index < st->heap.count && st->heap.entries[index].slot == slot,
          "positions[%u] = %u does not point at it", slot, index);
    tk__heap_entry e;
    CHECK(model_remove_slot(&st->m, slot, &e) == 0, "slot %u missing from model", slot);
    int64_t deadline;
    switch (rng_below(&st->r, 4)) {
    case 0: deadline = e.deadline; break;                       /* same, new seq */
    case 1: /* a little earlier (saturating) */
        deadline = e.deadline < INT64_MIN + 3 ? INT64_MIN
                                               : e.deadline - (int64_t)rng_below(&st->r, 3);
        break;
    case 2: /* a little later (saturating) */
        deadline = e.deadline > INT64_MAX - 3 ? INT64_MAX
                                               : e.deadline + (int64_t)rng_below(&st->r, 3);
        break;
    default: deadline = draw_deadline(st); break;
    }
    e.deadline = deadline;
    e.seq = st->seq++;
    tk__heap_update(&st->heap, st->positions, index, e.deadline, e.seq);
    model_insert(&st->m, e);
    CHECK(st->heap.entries[st->positions[slot]].slot == slot,
          "after update, positions[%u] = %u does not point at it", slot,
          st->positions[slot]);
    return 0;
}

/* Edits the array directly (new deadlines and seqs for a random subset, and
 * a few swaps), then heapifies. */
static int op_bulk_heapify(state *st) {
    tk__heap *h = &st->heap;
    if (h->count == 0) {
        tk__heap_heapify(h, st->positions);
        return check_full(st);
    }
    uint32_t edits = (uint32_t)rng_below(&st->r, h->count) + 1;
    for (uint32_t k = 0; k < edits; k++) {
        uint32_t i = (uint32_t)rng_below(&st->r, h->count);
        tk__heap_entry e;
        CHECK(model_remove_slot(&st->m, h->entries[i].slot, &e) == 0, "model lost slot");
        e.deadline = draw_deadline(st);
        e.seq = st->seq++;
        h->entries[i] = e;
        model_insert(&st->m, e);
    }
    uint32_t swaps = (uint32_t)rng_below(&st->r, 4);
    for (uint32_t k = 0; k < swaps; k++) {
        uint32_t i = (uint32_t)rng_below(&st->r, h->count);
        uint32_t j = (uint32_t)rng_below(&st->r, h->count);
        tk__heap_entry t = h->entries[i];
        h->entries[i] = h->entries[j];
        h->entries[j] = t;
    }
    tk__heap_heapify(h, st->positions);
    if (check_top(st)) return -1;
    return check_full(st);
}

/* Pops everything, checking that entries come out in exactly the model's
 * order. */
static int drain(state *st) {
    uint32_t k = 0;
    while (st->heap.count) {
        const tk__heap_entry *top = tk__heap_top(&st->heap);
        CHECK(st->m.n > 0, "heap holds more entries than the model");
        CHECK(top->slot == st->m.v[0].slot && top->seq == st->m.v[0].seq &&
                  top->deadline == st->m.v[0].deadline,
              "drain #%u: heap gave (%" PRId64 ", %u, slot %u), model (%" PRId64
              ", %u, slot %u)",
              k, top->deadline, top->seq, top->slot, st->m.v[0].deadline,
              st->m.v[0].seq, st->m.v[0].slot);
        if (op_remove_at(st, 0)) return -1;
        if ((k & 63) == 0 && check_full(st)) return -1;
        k++;
    }
    CHECK(st->m.n == 0, "model still holds %u entries after the heap drained", st->m.n);
    return 0;
}

static int run_case(const config *cfg, uint64_t seed, uint64_t ops) {
    state st;
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    rng_seed(&st.r, seed);
    tk__heap_init(&st.heap);
    CHECK(st.heap.count == 0 && tk__heap_top(&st.heap) == NULL, "fresh heap not empty");
    st.positions = malloc(cfg->max_slots * sizeof *st.positions);
    st.in_heap = calloc(cfg->max_slots, 1);
    st.free_slots = malloc(cfg->max_slots * sizeof *st.free_slots);
    if (!st.positions || !st.in_heap || !st.free_slots) abort();
    for (uint32_t i = 0; i < cfg->max_slots; i++) {
        st.free_slots[i] = cfg->max_slots - 1 - i;
        st.positions[i] = 0xdeadbeefu;
    }
    st.nfree = cfg->max_slots;
    st.seq = cfg->seq_start;
    st.target = 16;

    int rc = 0;
    for (g_op = 0; g_op < ops && rc == 0; g_op++) {
        /* Drift the size target now and then: small, medium, near full. */
        if (rng_below(&st.r, 2000) == 0) {
            switch (rng_below(&st.r, 4)) {
            case 0: st.target = (uint32_t)rng_below(&st.r, 8); break;
            case 1: st.target = (uint32_t)rng_below(&st.r, 100); break;
            case 2: st.target = (uint32_t)rng_below(&st.r, cfg->max_slots); break;
            default: st.target = cfg->max_slots; break;
            }
        }
        /* Per mille: push, remove at a random index, pop the top; the rest
         * updates, and 2 in 1000 heapify after bulk edits. Below the target
         * size pushes dominate, above it removals do. */
        int grow = st.heap.count < st.target;
        uint64_t push_pm = grow ? 550 : 150, remove_pm = grow ? 150 : 400,
                 pop_pm = grow ? 50 : 200;
        uint64_t k = rng_below(&st.r, 1000);
        if (k < push_pm) {
            rc = op_push(&st);
        } else if (k < push_pm + remove_pm) {
            rc = op_remove_random(&st);
        } else if (k < push_pm + remove_pm + pop_pm) {
            rc = op_pop(&st);
        } else if (k < 998) {
            rc = op_update(&st);
        } else {
            rc = op_bulk_heapify(&st);
        }
        if (rc == 0) rc = check_top(&st);
        if (rc == 0 && (st.heap.count < 16 || rng_below(&st.r, 256) == 0)) {
            rc = check_full(&st);
        }
    }
    if (rc == 0) rc = check_full(&st);
    if (rc == 0) rc = drain(&st);
    /* The heap is reusable after draining. */
    if (rc == 0) {
        for (int i = 0; i < 100 && rc == 0; i++) rc = op_push(&st);
        if (rc == 0) rc = check_full(&st);
        if (rc == 0) rc = drain(&st);
    }
    tk__heap_free(&st.heap);
    if (rc == 0) {
        CHECK(st.heap.entries == NULL && st.heap.count == 0 && st.heap.capacity == 0,
              "tk__heap_free did not reset the heap");
    }
    free(st.positions);
    free(st.in_heap);
    free(st.free_slots);
    free(st.m.v);
    return rc;
}

/* Deterministic checks of ties and of the seq wrap. */
static int case_ties_fifo(uint64_t seed) {
    (void)seed;
    g_op = 0;
    tk__heap h;
    tk__heap_init(&h);
    enum { N = 1000 };
    uint32_t positions[N];
    CHECK(tk__heap_reserve(&h, N) == 0, "reserve");
    /* Equal deadlines, seqs crossing the 32-bit wrap: must come out in the
     * order they were pushed. Pushed in a scrambled slot order. */
    uint32_t seq0 = UINT32_MAX - N / 2;
    for (uint32_t i = 0; i < N; i++) {
        uint32_t slot = (i * 7919u) % N;
        tk__heap_push(&h, positions, (tk__heap_entry){42, seq0 + i, slot});
    }
    for (uint32_t i = 0; i < N; i++) {
        const tk__heap_entry *top = tk__heap_top(&h);
        CHECK(top && top->seq == seq0 + i && top->slot == (i * 7919u) % N,
              "tie #%u came out as seq %u slot %u", i, top ? top->seq : 0,
              top ? top->slot : 0);
        tk__heap_remove(&h, positions, 0);
    }
    CHECK(tk__heap_top(&h) == NULL, "heap not empty");
    /* Reverse insertion with decreasing deadlines and equal ones mixed. */
    for (uint32_t i = 0; i < N; i++) {
        tk__heap_push(&h, positions, (tk__heap_entry){(int64_t)((N - i) / 10), i, i});
    }
    int64_t last_deadline = INT64_MIN;
    uint32_t last_seq = 0;
    for (uint32_t i = 0; i < N; i++) {
        const tk__heap_entry *top = tk__heap_top(&h);
        CHECK(top, "empty too early");
        CHECK(top->deadline > last_deadline ||
                  (top->deadline == last_deadline && top->seq > last_seq),
              "out of order at #%u: (%" PRId64 ", %u) after (%" PRId64 ", %u)", i,
              top->deadline, top->seq, last_deadline, last_seq);
        last_deadline = top->deadline;
        last_seq = top->seq;
        tk__heap_remove(&h, positions, 0);
    }
    tk__heap_free(&h);
    return 0;
}

static uint64_t parse_u64(const char *s, uint64_t fallback) {
    if (!s || !*s) return fallback;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end) {
        fprintf(stderr, "bad number '%s'\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t fallback_seed = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
    g_seed = parse_u64(argc > 1 ? argv[1] : getenv("TK_SEED"), fallback_seed);
    uint64_t ops = parse_u64(argc > 2 ? argv[2] : getenv("TK_HEAP_OPS"), 1000000);
    printf("test_heap: seed=%" PRIu64 " ops=%" PRIu64 "\n", g_seed, ops);

    static const config configs[] = {
        {"small-slots", 64, 0, 0},
        {"wrap-seq", 4096, UINT32_MAX - 300000, 0},
        {"wide-deadlines", 2048, 0x7fffff00u, 1},
    };
    /* Most of the ops go to the first two cases. */
    const uint64_t share[] = {ops / 4, ops / 2, ops - ops / 4 - ops / 2};

    g_case = "ties-fifo";
    g_case_failed = 0;
    if (case_ties_fifo(g_seed) || g_case_failed) g_failed++;
    else g_passed++;

    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        g_case = configs[i].name;
        g_case_failed = 0;
        uint64_t case_seed = g_seed + 0x1000193ull * (i + 1);
        if (run_case(&configs[i], case_seed, share[i]) || g_case_failed) {
            fprintf(stderr, "case %s failed; reproduce with: test_heap %" PRIu64 " %" PRIu64
                    "\n", configs[i].name, g_seed, ops);
            g_failed++;
        } else {
            g_passed++;
        }
    }
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
