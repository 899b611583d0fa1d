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
 * Usage: test_heap [seed] [--only=NAME]     (or env TK_SEED; env TK_HEAP_OPS
 *        sets how many random operations the three random cases share)
 */
#include "heap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_harness.h"

/* ------------------------------------------------------------------------
 * Failure reports
 * ------------------------------------------------------------------------ */

static uint64_t g_op; /* the operation a random case is at */

/* Reports a broken expectation with the operation it happened at and returns
 * -1 from the enclosing function; the test counts one failure for its case. */
#define REQUIRE(cond, ...)                                                     \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "FAIL [%s] seed=%" PRIu64 " op=%" PRIu64 " %s:%d: ", \
                    g_test, g_seed, g_op, __FILE__, __LINE__);                 \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
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
    uint64_t r;         /* random state */
    tk__heap heap;
    uint32_t *positions;
    model m;
    model held; /* the held entries (in the model's order; the heap keeps none) */
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
    REQUIRE(st->heap.count == st->m.n, "count %u, model %u", st->heap.count, st->m.n);
    REQUIRE(st->heap.held == st->held.n, "held %u, model %u", st->heap.held, st->held.n);
    REQUIRE(st->heap.count + st->heap.held <= st->heap.capacity,
          "count %u + held %u > capacity %u", st->heap.count, st->heap.held,
          st->heap.capacity);
    const tk__heap_entry *top = tk__heap_top(&st->heap);
    if (st->m.n == 0) {
        REQUIRE(top == NULL, "top of empty heap is not NULL");
        return 0;
    }
    REQUIRE(top != NULL, "top is NULL with %u entries", st->m.n);
    REQUIRE(top == &st->heap.entries[0], "top is not entries[0]");
    const tk__heap_entry *want = &st->m.v[0];
    REQUIRE(top->deadline == want->deadline && top->seq == want->seq &&
              top->slot == want->slot,
          "top (%" PRId64 ", %u, slot %u), model min (%" PRId64 ", %u, slot %u)",
          top->deadline, top->seq, top->slot, want->deadline, want->seq, want->slot);
    REQUIRE(st->positions[top->slot] == 0, "positions[top slot %u] = %u", top->slot,
          st->positions[top->slot]);
    return 0;
}

/* Full check: heap order for every parent/child pair, positions for every
 * entry, and the heap holding exactly the model's entries. */
static int check_full(state *st) {
    const tk__heap *h = &st->heap;
    st->checks_full++;
    REQUIRE(h->count == st->m.n, "count %u, model %u", h->count, st->m.n);
    for (uint32_t i = 1; i < h->count; i++) {
        uint32_t parent = (i - 1) / TK__HEAP_ARITY;
        REQUIRE(!tk__heap_entry_before(&h->entries[i], &h->entries[parent]),
              "heap order broken: entries[%u] (%" PRId64 ", %u) before its parent "
              "entries[%u] (%" PRId64 ", %u)",
              i, h->entries[i].deadline, h->entries[i].seq, parent,
              h->entries[parent].deadline, h->entries[parent].seq);
    }
    for (uint32_t i = 0; i < h->count; i++) {
        uint32_t slot = h->entries[i].slot;
        REQUIRE(slot < st->cfg->max_slots, "entries[%u].slot %u out of range", i, slot);
        REQUIRE(st->in_heap[slot], "entries[%u] holds slot %u which is not in the heap",
              i, slot);
        REQUIRE(st->positions[slot] == i, "positions[%u] = %u, but it is at %u", slot,
              st->positions[slot], i);
    }
    /* The held entries, right after the heap's. */
    REQUIRE(h->held == st->held.n, "held %u, model %u", h->held, st->held.n);
    for (uint32_t k = 0; k < st->held.n; k++) {
        const tk__heap_entry *e = &st->held.v[k];
        uint32_t i = st->positions[e->slot];
        REQUIRE(i >= h->count && i < h->count + h->held,
              "held slot %u: position %u outside [%u, %u)", e->slot, i, h->count,
              h->count + h->held);
        REQUIRE(h->entries[i].slot == e->slot && h->entries[i].deadline == e->deadline &&
                  h->entries[i].seq == e->seq,
              "held slot %u: heap has (%" PRId64 ", %u), model (%" PRId64 ", %u)", e->slot,
              h->entries[i].deadline, h->entries[i].seq, e->deadline, e->seq);
    }
    /* Same multiset: every model entry is found, with equal fields, through
     * positions[] (slots are unique, so this with equal counts suffices). */
    for (uint32_t k = 0; k < st->m.n; k++) {
        const tk__heap_entry *e = &st->m.v[k];
        uint32_t i = st->positions[e->slot];
        REQUIRE(i < h->count, "model slot %u: position %u out of range", e->slot, i);
        REQUIRE(h->entries[i].slot == e->slot && h->entries[i].deadline == e->deadline &&
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
    uint32_t want = st->heap.count + st->heap.held + 1;
    uint32_t old_cap = st->heap.capacity;
    REQUIRE(tk__heap_reserve(&st->heap, want) == 0, "reserve(%u) failed", want);
    REQUIRE(st->heap.capacity >= want, "reserve(%u) left capacity %u", want,
          st->heap.capacity);
    if (old_cap >= want) {
        REQUIRE(st->heap.capacity == old_cap, "reserve(%u) changed capacity %u -> %u "
              "although there was room", want, old_cap, st->heap.capacity);
    }
    tk__heap_entry e = {draw_deadline(st), st->seq++, take_slot(st)};
    tk__heap_push(&st->heap, st->positions, e);
    model_insert(&st->m, e);
    REQUIRE(st->positions[e.slot] < st->heap.count &&
              st->heap.entries[st->positions[e.slot]].slot == e.slot,
          "after push, positions[%u] = %u does not point at it", e.slot,
          st->positions[e.slot]);
    return 0;
}

static int op_remove_at(state *st, uint32_t index) {
    uint32_t slot = st->heap.entries[index].slot;
    tk__heap_entry gone;
    model *in = index < st->heap.count ? &st->m : &st->held;
    REQUIRE(model_remove_slot(in, slot, &gone) == 0,
          "heap entries[%u] holds slot %u unknown to the model", index, slot);
    REQUIRE(gone.deadline == st->heap.entries[index].deadline &&
              gone.seq == st->heap.entries[index].seq,
          "slot %u: heap (%" PRId64 ", %u), model (%" PRId64 ", %u)", slot,
          st->heap.entries[index].deadline, st->heap.entries[index].seq,
          gone.deadline, gone.seq);
    tk__heap_remove(&st->heap, st->positions, index);
    give_slot(st, slot);
    return 0;
}

static int op_remove_random(state *st) {
    if (st->m.n + st->held.n == 0) return 0;
    uint32_t k = (uint32_t)rng_below(&st->r, st->m.n + st->held.n);
    uint32_t slot = k < st->m.n ? st->m.v[k].slot : st->held.v[k - st->m.n].slot;
    uint32_t index = st->positions[slot];
    REQUIRE((index < st->heap.count) == (k < st->m.n) &&
              index < st->heap.count + st->heap.held,
          "positions[%u] = %u, count %u, held %u", slot, index, st->heap.count,
          st->heap.held);
    REQUIRE(st->heap.entries[index].slot == slot,
          "positions[%u] = %u but entries[%u].slot = %u", slot, index, index,
          st->heap.entries[index].slot);
    return op_remove_at(st, index);
}

static int op_pop(state *st) {
    if (st->m.n == 0) return 0;
    const tk__heap_entry *top = tk__heap_top(&st->heap);
    REQUIRE(top != NULL, "top is NULL with %u entries", st->m.n);
    REQUIRE(top->slot == st->m.v[0].slot, "top slot %u, model min slot %u", top->slot,
          st->m.v[0].slot);
    return op_remove_at(st, 0);
}

static int op_update(state *st) {
    if (st->m.n == 0) return 0;
    uint32_t slot = random_live_slot(st);
    uint32_t index = st->positions[slot];
    REQUIRE(index < st->heap.count && st->heap.entries[index].slot == slot,
          "positions[%u] = %u does not point at it", slot, index);
    tk__heap_entry e;
    REQUIRE(model_remove_slot(&st->m, slot, &e) == 0, "slot %u missing from model", slot);
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
    REQUIRE(st->heap.entries[st->positions[slot]].slot == slot,
          "after update, positions[%u] = %u does not point at it", slot,
          st->positions[slot]);
    return 0;
}

/* Holds the top entry. */
static int op_hold(state *st) {
    if (st->m.n == 0) return 0;
    tk__heap_entry top = st->heap.entries[0];
    REQUIRE(top.slot == st->m.v[0].slot, "top slot %u, model min slot %u", top.slot,
          st->m.v[0].slot);
    tk__heap_entry e;
    REQUIRE(model_remove_slot(&st->m, top.slot, &e) == 0, "slot %u missing", top.slot);
    model_insert(&st->held, e);
    tk__heap_hold_top(&st->heap, st->positions);
    REQUIRE(st->positions[top.slot] >= st->heap.count &&
              st->heap.entries[st->positions[top.slot]].slot == top.slot,
          "after hold, positions[%u] = %u (count %u)", top.slot, st->positions[top.slot],
          st->heap.count);
    return 0;
}

/* Puts every held entry back in heap order. */
static int op_release(state *st) {
    tk__heap_release_held(&st->heap, st->positions);
    for (uint32_t k = 0; k < st->held.n; k++) model_insert(&st->m, st->held.v[k]);
    st->held.n = 0;
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
        REQUIRE(model_remove_slot(&st->m, h->entries[i].slot, &e) == 0, "model lost slot");
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
    op_release(st);
    while (st->heap.count) {
        const tk__heap_entry *top = tk__heap_top(&st->heap);
        REQUIRE(st->m.n > 0, "heap holds more entries than the model");
        REQUIRE(top->slot == st->m.v[0].slot && top->seq == st->m.v[0].seq &&
                  top->deadline == st->m.v[0].deadline,
              "drain #%u: heap gave (%" PRId64 ", %u, slot %u), model (%" PRId64
              ", %u, slot %u)",
              k, top->deadline, top->seq, top->slot, st->m.v[0].deadline,
              st->m.v[0].seq, st->m.v[0].slot);
        if (op_remove_at(st, 0)) return -1;
        if ((k & 63) == 0 && check_full(st)) return -1;
        k++;
    }
    REQUIRE(st->m.n == 0, "model still holds %u entries after the heap drained", st->m.n);
    return 0;
}

/* One randomized run of `ops` operations from the random state `seed`.
 * 0, or -1 after reporting what broke. */
static int run_case(const config *cfg, uint64_t seed, uint64_t ops) {
    state st;
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    st.r = seed;
    tk__heap_init(&st.heap);
    REQUIRE(st.heap.count == 0 && tk__heap_top(&st.heap) == NULL, "fresh heap not empty");
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
        /* Per mille: push, remove at a random index (held entries too), pop
         * the top; the rest updates, holds the top (30), releases what is
         * held (8), and 2 in 1000 heapify after bulk edits. Below the target
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
        } else if (k < 960) {
            rc = op_update(&st);
        } else if (k < 990) {
            rc = op_hold(&st);
        } else if (k < 998) {
            rc = op_release(&st);
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
        REQUIRE(st.heap.entries == NULL && st.heap.count == 0 && st.heap.capacity == 0,
              "tk__heap_free did not reset the heap");
    }
    free(st.positions);
    free(st.in_heap);
    free(st.free_slots);
    free(st.m.v);
    free(st.held.v);
    return rc;
}

/* Deterministic checks of ties and of the seq wrap. */
static int case_ties_fifo(void) {
    g_op = 0;
    tk__heap h;
    tk__heap_init(&h);
    enum { N = 1000 };
    uint32_t positions[N];
    REQUIRE(tk__heap_reserve(&h, N) == 0, "reserve");
    /* Equal deadlines, seqs crossing the 32-bit wrap: must come out in the
     * order they were pushed. Pushed in a scrambled slot order. */
    uint32_t seq0 = UINT32_MAX - N / 2;
    for (uint32_t i = 0; i < N; i++) {
        uint32_t slot = (i * 7919u) % N;
        tk__heap_push(&h, positions, (tk__heap_entry){42, seq0 + i, slot});
    }
    for (uint32_t i = 0; i < N; i++) {
        const tk__heap_entry *top = tk__heap_top(&h);
        REQUIRE(top && top->seq == seq0 + i && top->slot == (i * 7919u) % N,
              "tie #%u came out as seq %u slot %u", i, top ? top->seq : 0,
              top ? top->slot : 0);
        tk__heap_remove(&h, positions, 0);
    }
    REQUIRE(tk__heap_top(&h) == NULL, "heap not empty");
    /* Reverse insertion with decreasing deadlines and equal ones mixed. */
    for (uint32_t i = 0; i < N; i++) {
        tk__heap_push(&h, positions, (tk__heap_entry){(int64_t)((N - i) / 10), i, i});
    }
    int64_t last_deadline = INT64_MIN;
    uint32_t last_seq = 0;
    for (uint32_t i = 0; i < N; i++) {
        const tk__heap_entry *top = tk__heap_top(&h);
        REQUIRE(top, "empty too early");
        REQUIRE(top->deadline > last_deadline ||
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

/* ------------------------------------------------------------------------
 * The tests
 * ------------------------------------------------------------------------ */

static const config configs[] = {
    {"small-slots", 64, 0, 0},
    {"wrap-seq", 4096, UINT32_MAX - 300000, 0},
    {"wide-deadlines", 2048, 0x7fffff00u, 1},
};

/* How many random operations the three random cases share (TK_HEAP_OPS);
 * most go to the first two. */
static uint64_t g_ops = 1000000;

static void run_config(size_t i) {
    const uint64_t share[] = {g_ops / 4, g_ops / 2, g_ops - g_ops / 4 - g_ops / 2};
    if (run_case(&configs[i], g_rng, share[i]) == 0) {
        CHECK(1);
        return;
    }
    PROPERTY_FAIL("reproduce: TK_HEAP_OPS=%" PRIu64 " test_heap %" PRIu64 " --only=%s", g_ops,
                  g_seed, configs[i].name);
}

static void test_ties_fifo(void) { CHECK_EQ(case_ties_fifo(), 0); }
static void test_small_slots(void) { run_config(0); }
static void test_wrap_seq(void) { run_config(1); }
static void test_wide_deadlines(void) { run_config(2); }

static const test_case tests[] = {
    {"ties-fifo", test_ties_fifo, 60},
    {"small-slots", test_small_slots, 600},
    {"wrap-seq", test_wrap_seq, 600},
    {"wide-deadlines", test_wide_deadlines, 600},
};

int main(int argc, char **argv) {
    const char *ops = getenv("TK_HEAP_OPS");
    if (ops && *ops) {
        char *end;
        errno = 0;
        g_ops = strtoull(ops, &end, 0);
        if (errno || *end) {
            fprintf(stderr, "test_heap: bad TK_HEAP_OPS '%s'\n", ops);
            return 2;
        }
    }
    printf("test_heap: %" PRIu64 " random operations\n", g_ops);
    return test_main(argc, argv, "test_heap", tests, sizeof tests / sizeof tests[0]);
}
