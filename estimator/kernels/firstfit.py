"""Karmada's First-Fit set packing, without Karmada's rescan from node 0 for every set.

Go (SchedulingSimulator) places one complete set at a time: components in order, each
walking the nodes from the first and taking min(remaining, fit) replicas per node, until a
component cannot be completed. We give the same answer, the same placement and the same
leftover `available`, in O(C·N·K + events) instead of O(sets·C·N·K):

- Pointers. Nodes only lose resources, so a fit never grows. Every node a component walks
  past is left with fit 0 for it (it was 0, or the component took all it could), so the
  next set may start that component's walk at the node where its last walk ended.
- Bulk steps. After each set placed by hand, split the components in two kinds:
  * stationary: it put all of its replicas on one node n_c, and the node still holds
    t copies of what the set took from it (summed over every stationary component there,
    in every column). For the next t sets each of them takes its replicas from n_c again:
    at set j <= t, n_c has lost at most j-1 copies plus the earlier components of set j.
  * movers: the others. A mover's next sets are a greedy fill of its own walk (its fit on
    a node drops by exactly what it places), as long as no other component touches the
    nodes it walks. Its region is its walk from its pointer up to the first node it could
    use that another component may touch: a stationary node, or (walks in node-index
    order only) the pointer of the next mover ahead of it. Two movers on one node, or
    several movers on per-component walks, end the step.
  With S = min(every stationary t, every mover's region capacity // its replicas), the
  next S sets are complete and each component's share of them is known in one pass: we
  apply S sets at once. No set in the step fails, so failures are only ever met by hand.
- After a step some stationary node cannot take another copy or some mover reached the
  end of its region, so the next hand set moves a component or fails. A pointer only
  moves forward, so there are O(C·N) hand sets; in practice a few per node where some
  component's stay ends.
- Where steps keep coming out small (sets that differ one to the next, as a small
  jobmanager and large taskmanagers sharing nodes do: 1-3 sets per step), a step costs
  about what it saves (Flink at 10k nodes: no faster with them than without): the kernel
  then tries one only every 2nd, 4th, ... 64th hand set, and at once again after a step
  of 4 or more. Skipping a step never changes the result.

The same kernel packs with other component and node orders (the best mode's candidates),
and packs k sets' worth of replicas as one set (replicas scaled by k, upper 1). Karmada's
own order with two components of a few replicas each (Flink, PyTorchJob) goes to
`firstfit_pair` instead, with three (Ray) to `firstfit_trio`: same results, a cheaper set
by hand.
"""

from __future__ import annotations

import threading

import numpy as np

from ._arith import INT64_MAX, SMALL, capped_quotient, take
from ._arrays import Packing, problem, readonly
from ._numba import kernel
from .firstfit_pair import pair_components, pair_first_fit
from .firstfit_trio import scratch as trio_scratch
from .firstfit_trio import trio_components, trio_first_fit
from .fit import (
    Pool,
    column_bound,
    column_fit_sum,
    column_pool,
    columnar_requests,
    fit_sum,
    magics_buffer,
    pool_pass,
    validated_layout,
)

_MAX_BACKOFF = 63
_WORTH_IT = 4  # a bulk step of this many sets saves more than it costs
_NO_NODE_ORDER = readonly(np.zeros((0, 0), dtype=np.int64))
_NO_LENGTHS = readonly(np.zeros(0, dtype=np.int64))
_NO_COLUMNS = _NO_NODE_ORDER  # no column layout: the bound's node-by-node passes


@kernel(inline="always")
def _fill(
    available: np.ndarray,
    requests: np.ndarray,
    masks: np.ndarray,
    c: int,
    node_order: np.ndarray,
    length: int,
    pointer: np.ndarray,
    want: int,
    placement: np.ndarray,
    info: np.ndarray,
) -> int:
    """Greedy walk of c from its pointer placing up to `want` replicas; returns what is left.

    The pointer stays on the node that completed `want` (it may fit more), else ends at
    `length`.
    """
    ordered = node_order.shape[0] > 0
    p = pointer[c]
    remaining = want
    while p < length:
        n = node_order[c, p] if ordered else p
        if masks[c, n]:
            f = take(available, requests, c, n, remaining)
            if f > 0:
                for k in range(available.shape[1]):
                    available[n, k] -= f * requests[c, k]
                placement[c, n] += f
                remaining -= f
                if remaining == 0:
                    break
        p += 1
    info[1] += p - pointer[c] + 1
    pointer[c] = p
    return remaining


@kernel(inline="always")
def _bulk(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    order: np.ndarray,
    node_order: np.ndarray,
    lengths: np.ndarray,
    pointer: np.ndarray,
    single: np.ndarray,
    demand: np.ndarray,
    movers: np.ndarray,
    mark: np.ndarray,
    stamp: int,
    limit: int,
    placement: np.ndarray,
    info: np.ndarray,
) -> int:
    """The bulk step (module docstring): plan S <= limit sets, apply them, return S (0: none).

    Adds the nodes its walks visit, and its planning, to info[1] (the work count).

    single[c]: the node holding all of c's replicas in the last set, or < 0. demand[i]:
    filled for the first stationary component of each node (position i in `order`), else
    demand[i, 0] = -1. mark[n] == stamp: n is a stationary node in this step.

    Longer than 100 lines on purpose (issue 30 allows this one): split into small
    `inline="always"` kernels (plan, movers' order, rear movers' room, front fill, apply),
    the general first-fit got slower on the 10k-node benchmark member, same run, medians of
    60 calls: flink 846 -> 898 us (+6%), ray 139 -> 152 (+9%), affinity-tolerations 24 -> 27;
    with the plan left inline, flink 843 -> 882 (+5%), ray 126 -> 134 (+6%); answers equal.
    """
    n_comp, n_cols = order.shape[0], available.shape[1]
    n_nodes = available.shape[0]
    ordered = node_order.shape[0] > 0
    s = limit
    n_movers = 0
    info[1] += n_comp
    for i in range(n_comp):
        c = order[i]
        demand[i, 0] = -1
        if replicas[c] == 0:
            continue
        n = single[c]
        if n < 0:
            movers[n_movers] = c
            n_movers += 1
            continue
        if mark[n] == stamp:
            continue  # a later member of a node already planned
        t = s
        members = 0
        for k in range(n_cols):
            d = 0
            for j in range(i, n_comp):
                cj = order[j]
                if single[cj] == n and replicas[cj] > 0:
                    # What the last set took from n was subtracted from a non-negative
                    # int64, so this sum fits in int64.
                    d += replicas[cj] * requests[cj, k]
                    if k == 0:
                        members += 1
            demand[i, k] = d
            if d > 0:
                t = capped_quotient(t, available[n, k], d)
        if t == 0:
            if members > 1:
                return 0  # components sharing a node that is full: the next set is by hand
            demand[i, 0] = -1
            movers[n_movers] = c  # alone on a full node: it moves on from there
            n_movers += 1
            continue
        mark[n] = stamp
        s = min(s, t)
    if n_movers > 1:
        if ordered:
            return 0  # per-component walks: no cheap proof that their regions are apart
        for i in range(1, n_movers):  # by pointer (insertion sort; a handful of components)
            c = movers[i]
            j = i - 1
            while j >= 0 and pointer[movers[j]] > pointer[c]:
                movers[j + 1] = movers[j]
                j -= 1
            movers[j + 1] = c
        for i in range(1, n_movers):
            if pointer[movers[i]] == pointer[movers[i - 1]]:
                return 0
    # Rear movers (walks in node-index order, behind the front one): their regions end at
    # the next mover's pointer, so their capacity is counted first, lowering s.
    for i in range(n_movers - 1):
        c = movers[i]
        r = replicas[c]
        if r > SMALL:
            return 0
        end = pointer[movers[i + 1]]
        need = s * r
        room = 0
        p = pointer[c]
        while p < end and room < need:
            if masks[c, p]:
                f = take(available, requests, c, p, need - room)
                if f > 0:
                    if mark[p] == stamp:
                        break  # a stationary node it could use: its region ends here
                    room += f
            p += 1
        info[1] += p - pointer[c]
        s = min(s, room // r)
        if s == 0:
            return 0
    if n_movers > 0:
        # The front mover fills s sets' worth directly; if its region holds less, the
        # replicas of the incomplete set are given back and s drops to what it completed.
        c = movers[n_movers - 1]
        r = replicas[c]
        if r > SMALL:
            return 0
        length = lengths[c] if ordered else n_nodes
        start = pointer[c]
        before = 0
        if start < length:
            before = placement[c, node_order[c, start] if ordered else start]
        want = s * r
        remaining = want
        p = start
        while p < length:
            n = node_order[c, p] if ordered else p
            if masks[c, n]:
                f = take(available, requests, c, n, remaining)
                if f > 0:
                    if mark[n] == stamp:
                        break
                    for k in range(n_cols):
                        available[n, k] -= f * requests[c, k]
                    placement[c, n] += f
                    remaining -= f
                    if remaining == 0:
                        break
            p += 1
        info[1] += p - start + 1
        if remaining == 0:
            pointer[c] = p
        else:
            s = (want - remaining) // r
            extra = want - remaining - s * r
            q = min(p, length - 1)
            while extra > 0:
                n = node_order[c, q] if ordered else q
                # Past its pointer a component had placed nothing before this fill.
                here = placement[c, n] - (before if q == start else 0)
                drop = min(here, extra)
                placement[c, n] -= drop
                for k in range(n_cols):
                    available[n, k] += drop * requests[c, k]
                extra -= drop
                if extra > 0:
                    q -= 1
            # The pointer goes back to the node that completed the last kept set.
            q = min(p, length - 1)
            while q > start and placement[c, node_order[c, q] if ordered else q] == 0:
                q -= 1
            pointer[c] = max(q, start)
            if s == 0:
                return 0
    for i in range(n_movers - 1):
        c = movers[i]
        _fill(available, requests, masks, c, node_order, n_nodes, pointer, s * replicas[c], placement, info)
    for i in range(n_comp):
        c = order[i]
        n = single[c]
        if n < 0 or replicas[c] == 0 or mark[n] != stamp:
            continue
        placement[c, n] += s * replicas[c]
        if demand[i, 0] >= 0:
            for k in range(n_cols):
                available[n, k] -= s * demand[i, k]
    return s


@kernel(inline="always")
def _unplace(
    replicas: np.ndarray,
    order: np.ndarray,
    node_order: np.ndarray,
    lengths: np.ndarray,
    last: int,
    start_at: np.ndarray,
    start_held: np.ndarray,
    pointer: np.ndarray,
    placement: np.ndarray,
) -> None:
    """Take the set in progress (components order[:last + 1]) back out of `placement`."""
    ordered = node_order.shape[0] > 0
    for i in range(last + 1):
        c = order[i]
        if replicas[c] == 0:
            continue  # placed nothing; its start_at is stale
        end = min(pointer[c], (lengths[c] if ordered else placement.shape[1]) - 1)
        for p in range(start_at[c], end + 1):
            n = node_order[c, p] if ordered else p
            placement[c, n] = start_held[c] if p == start_at[c] else 0


@kernel
def _first_fit(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    order: np.ndarray,
    node_order: np.ndarray,
    lengths: np.ndarray,
    upper: int,
    placement: np.ndarray,
    info: np.ndarray,
    mark: np.ndarray,
    small: np.ndarray,
    demand: np.ndarray,
) -> int:
    """Pack sets until one fails or `upper` are placed; return how many were complete.

    order: components in packing order. node_order[c, :lengths[c]]: the nodes component c
    walks, in order; with zero rows, every component walks all nodes by index.
    Consumes `available`; adds complete sets only to `placement` (zeroed by the caller);
    info[0] = the component that could not complete a set (left as is if none); info[1] +=
    the work done: nodes visited by every walk (hand sets and bulk steps), a deterministic
    measure of the kernel's cost that best mode's budget counts in. mark: int64 scratch of
    at least the node count, any content (the caller's per-thread buffer: no node-sized
    allocation per call). small, demand: int64 scratch of the caller's (`_small_scratch`:
    no kernel allocates, so loading them from numba's cache does not import its array
    implementations), any content.
    """
    n_req, n_cols = requests.shape
    n_nodes = available.shape[0]
    n_comp = order.shape[0]
    ordered = node_order.shape[0] > 0
    small[: 4 * n_req] = 0
    pointer = small[:n_req]
    single = small[n_req : 2 * n_req]  # node holding all of c in this set; -1 none; -2 several
    # Where each component's walk started in the set in progress, and what `placement`
    # held there, to take a set that fails back out of `placement` (complete sets only).
    # Past its pointer a component has placed nothing, so those entries were 0.
    start_at = small[2 * n_req : 3 * n_req]
    start_held = small[3 * n_req : 4 * n_req]
    movers = small[4 * n_req : 4 * n_req + n_comp]
    mark[:n_nodes] = 0  # stationary nodes of the step with that stamp
    stamp = 0
    wait = 0  # hand sets before the next bulk step is tried
    backoff = 0
    sets = 0
    work = 0  # node visits of the sets by hand, kept in a register (stores to arrays are reloads' barriers)
    while sets < upper:
        for i in range(n_comp):
            c = order[i]
            remaining = replicas[c]
            single[c] = -1
            if remaining == 0:
                continue
            length = lengths[c] if ordered else n_nodes
            p = pointer[c]
            start_at[c] = p
            if p < length:
                start_held[c] = placement[c, node_order[c, p] if ordered else p]
            used = 0
            while p < length:
                n = node_order[c, p] if ordered else p
                if masks[c, n]:
                    f = take(available, requests, c, n, remaining)
                    if f > 0:
                        for k in range(n_cols):
                            available[n, k] -= f * requests[c, k]
                        placement[c, n] += f
                        single[c] = n
                        used += 1
                        remaining -= f
                        if remaining == 0:
                            break  # this node may fit more: the next walk starts here
                p += 1
            work += p - start_at[c] + 1
            pointer[c] = p
            if remaining > 0:
                # The partial set's consumption stays in `available`, as in Go.
                _unplace(replicas, order, node_order, lengths, i, start_at, start_held, pointer, placement)
                info[0] = c
                info[1] += work
                return sets
            if used > 1:
                single[c] = -2
        sets += 1
        if sets >= upper:
            break
        if wait > 0:
            wait -= 1
            continue
        stamp += 1
        got = _bulk(
            available, requests, replicas, masks, order, node_order, lengths, pointer,
            single, demand, movers, mark, stamp, upper - sets, placement, info,
        )  # fmt: skip
        sets += got
        # A small step costs more than it saves; where they keep coming (sets that differ
        # one to the next, a few per node), try less often, up to every 64th set.
        backoff = 0 if got >= _WORTH_IT else min(2 * backoff + 1, _MAX_BACKOFF)
        wait = backoff
    info[1] += work
    return sets


_SCRATCH = threading.local()  # per thread: the estimator answers on several gRPC threads


def _mark(n_nodes: int) -> np.ndarray:
    """This thread's `_first_fit` scratch, at least n_nodes long (grown, never shrunk)."""
    mark = getattr(_SCRATCH, "mark", None)
    if mark is None or mark.shape[0] < n_nodes:
        mark = _SCRATCH.mark = np.zeros(max(n_nodes, 1), dtype=np.int64)
    return mark


def _small_scratch(requests: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_first_fit`'s `small` (four entries per component, one per component in `order`) and
    `demand` (one row per component in `order`)."""
    n_req, n_cols = requests.shape
    return np.empty(4 * n_req + order.shape[0], dtype=np.int64), np.empty((order.shape[0], n_cols), dtype=np.int64)


def pack(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    order: np.ndarray,
    node_order: np.ndarray,
    lengths: np.ndarray,
    upper: int,
) -> Packing:
    """`_first_fit` on already-validated arrays (consumes `available`)."""
    placement = np.zeros(masks.shape, dtype=np.int64)
    info = np.array([-1, 0], dtype=np.int64)
    sets = _first_fit(
        available,
        readonly(requests),
        readonly(replicas),
        readonly(masks),
        readonly(order),
        readonly(node_order),
        readonly(lengths),
        upper,
        placement,
        info,
        _mark(available.shape[0]),
        *_small_scratch(requests, order),
    )
    limiting, work = info.tolist()
    return Packing(sets, placement, -1, limiting, work)


def karmada_first_fit(
    available: np.ndarray, requests: np.ndarray, replicas: np.ndarray, masks: np.ndarray, upper: int
) -> Packing:
    """Karmada's order (components as given, nodes by index) on validated arrays: the
    two-component kernel where it applies (`firstfit_pair.pair_components`), the
    three-component one where it does (`firstfit_trio.trio_components`), else the
    general one. On every request's path: Python lists for the tiny arrays' tests, no
    numpy reductions."""
    counts = replicas.tolist()
    if not any(counts):
        # Every set is empty and "fits"; Go would loop to its bound, we answer it directly.
        return Packing(upper, np.zeros(masks.shape, dtype=np.int64))
    pair = pair_components(requests, counts) if available.shape[0] > 0 else None
    if pair is not None:
        # Two components (Flink, PyTorchJob): the cheaper set by hand of `firstfit_pair`.
        placement = np.zeros(masks.shape, dtype=np.int64)
        info = np.array([-1, 0], dtype=np.int64)
        sets = pair_first_fit(
            available, readonly(requests), readonly(replicas), readonly(masks), pair[0], pair[1], upper, placement, info
        )
        limiting, work = info.tolist()
        return Packing(sets, placement, -1, limiting, work)
    trio = trio_components(requests, counts) if available.shape[0] > 0 else None
    if trio is not None:
        # Three components (Ray): sets by hand with requests in locals, `firstfit_trio`.
        placement = np.zeros(masks.shape, dtype=np.int64)
        info = np.array([-1, 0], dtype=np.int64)
        sets = trio_first_fit(
            available,
            readonly(requests),
            readonly(replicas),
            readonly(masks),
            *trio,
            upper,
            placement,
            info,
            trio_scratch(),
        )
        limiting, work = info.tolist()
        return Packing(sets, placement, -1, limiting, work)
    return general_first_fit(available, requests, replicas, masks, upper)


def general_first_fit(
    available: np.ndarray, requests: np.ndarray, replicas: np.ndarray, masks: np.ndarray, upper: int
) -> Packing:
    """Karmada's order through the general kernel (every component count; the reference the
    two-component kernel is timed against)."""
    order = np.arange(replicas.shape[0], dtype=np.int64)
    return pack(available, requests, replicas, masks, order, _NO_NODE_ORDER, _NO_LENGTHS, upper)


# The kernel `karmada_first_fit` runs for a problem (`_kernel_for`).
_GENERAL, _PAIR, _TRIO = 0, 2, 3


def _kernel_for(requests: np.ndarray, counts: list[int], n_nodes: int) -> tuple[int, int, int, int]:
    """(which kernel, its components) as `karmada_first_fit` picks: `firstfit_pair`'s,
    `firstfit_trio`'s, else the general one (-1: no component)."""
    if n_nodes > 0:
        pair = pair_components(requests, counts)
        if pair is not None:
            return _PAIR, pair[0], pair[1], -1
        trio = trio_components(requests, counts)
        if trio is not None:
            return _TRIO, trio[0], trio[1], trio[2]
    return _GENERAL, -1, -1, -1


@kernel
def _staged_first_fit(
    pristine: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    upper: int,
    which: int,
    c0: int,
    c1: int,
    c2: int,
    order: np.ndarray,
    node_order: np.ndarray,
    lengths: np.ndarray,
    bound_it: bool,
    placement: np.ndarray,
    info: np.ndarray,
    mark: np.ndarray,
    rows: np.ndarray,
    columns: np.ndarray,
    fits: np.ndarray,
    flags: np.ndarray,
    totals: np.ndarray,
    available: np.ndarray,
    small: np.ndarray,
    demand: np.ndarray,
    magics: np.ndarray,
) -> int:
    """`karmada_first_fit` (`which` kernel, on `available`, a copy of `pristine`; the general one with
    `order`, `node_order`, `lengths` as `general_first_fit` passes them) and, with
    `bound_it`, the first stages of `fit.staged_bound` on `pristine` from its answer, in one
    call: what a request of a shape not seen before costs, without a return to Python
    between its passes. info[0], info[1]: first-fit's limiting component and work; info[2]:
    the limiting component's bound (`fit.first_fit_bound`); info[3]: the eligible pool's
    node count (`fit.eligible_pool`: flags[1] marks its nodes, `totals` holds its column
    totals), info[4] the bound those totals give (`fit.pool_bound`); each -1 where its
    stage did not run (first-fit reached `upper`, or the stage before came down to
    first-fit's answer). Not for a job whose components all have 0 replicas. `available`
    is the caller's copy of `pristine` (first-fit consumes it), and `small`, `demand`,
    `magics` are the scratch of `_first_fit` and `fit.fit_sum`, and `fits` (int64 [N]) and
    `flags` (bool [2, N]) that of the bound's column passes (`fit.column_fit_sum`,
    `fit.column_pool`), which run on `columns` (`fit.column_layout` of `pristine`; an
    empty one where that is None: then the node-by-node `fit.fit_sum` and `fit.pool_pass`
    run): all the caller's, as no kernel allocates."""
    if which == _PAIR:
        sets = pair_first_fit(available, requests, replicas, masks, c0, c1, upper, placement, info)
    elif which == _TRIO:
        sets = trio_first_fit(available, requests, replicas, masks, c0, c1, c2, upper, placement, info, rows)
    else:
        sets = _first_fit(
            available,
            requests,
            replicas,
            masks,
            order,
            node_order,
            lengths,
            upper,
            placement,
            info,
            mark,
            small,
            demand,
        )
    info[2] = -1
    info[3] = -1
    info[4] = -1
    if not bound_it or sets >= upper:
        return sets
    limiting = info[0]
    if limiting >= 0 and replicas[limiting] > 0:
        r = replicas[limiting]
        active = 0
        for c in range(replicas.shape[0]):
            if replicas[c] > 0:
                active += 1
        if active == 1 and sets + 1 <= INT64_MAX // r:
            info[2] = sets  # `fit.first_fit_bound`: one component's first-fit is its own bound
            return sets
    else:
        limiting = -1  # no component's bound: upper, and the pool
    # The limiting component's fits first: where they prove first-fit optimal (most jobs)
    # the eligible pool is never needed, and its pass is skipped. Where they do not, the
    # pool's pass follows. Both run column by column where the amounts allow it.
    columnar = columns.shape == (pristine.shape[1], pristine.shape[0]) and columnar_requests(requests)
    bound = upper
    if limiting >= 0:
        if columnar:
            total = column_fit_sum(columns, requests[limiting], masks[limiting], fits)
        else:
            total = fit_sum(pristine, requests[limiting], masks[limiting], magics)
        bound = min(upper, total // replicas[limiting])
    info[2] = bound
    if bound > sets:
        if columnar:
            info[3] = column_pool(columns, requests, replicas, masks, flags[0], flags[1], totals)
        else:
            info[3] = pool_pass(pristine, requests, replicas, masks, flags[1], totals)
        info[4] = column_bound(totals, requests, replicas, bound)  # `fit.pool_bound`
    return sets


def staged_first_fit(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    upper: int,
    bound_it: bool = True,
    by_column: np.ndarray | None = None,
) -> tuple[Packing, Pool | None]:
    """`karmada_first_fit` on a copy of `available` (validated arrays, left untouched), and,
    with `bound_it`, the staged bound's first stages from its answer (`_staged_first_fit`):
    the packing carries the bound they reach (-1 without `bound_it`) and, if the pool's
    stage ran, the pool's size; the pool itself is returned too. The bound is
    `fit.staged_bound`'s but for its last stage, the full pass over a small pool, which the
    caller runs (`fit.full_pass_affordable`). `by_column`: `fit.column_layout(available)`
    if the caller keeps it (worked out here otherwise, for a bound)."""
    counts = replicas.tolist()
    if not any(counts):
        # Every set is empty and "fits"; Go would loop to its bound, we answer it directly.
        return Packing(upper, np.zeros(masks.shape, dtype=np.int64), upper if bound_it else -1), None
    n_nodes, n_cols = available.shape
    which, c0, c1, c2 = _kernel_for(requests, counts, n_nodes)
    order = readonly(np.arange(len(counts), dtype=np.int64)) if which == _GENERAL else _NO_LENGTHS
    placement = np.zeros(masks.shape, dtype=np.int64)
    info = np.array([-1, 0, -1, -1, -1], dtype=np.int64)
    width = n_nodes if bound_it else 0
    if by_column is not None and (by_column.shape != (n_cols, n_nodes) or by_column.dtype != np.int64):
        raise ValueError(f"by_column must be int64 [{n_cols}, {n_nodes}] (available's columns), got {by_column.shape}")
    if bound_it and by_column is None:
        by_column = validated_layout(available)
    columns = _NO_COLUMNS if by_column is None else by_column
    fits = np.empty(width, dtype=np.int64)
    flags = np.empty((2, width), dtype=np.bool_)
    totals = np.empty(n_cols, dtype=np.int64)
    sets = _staged_first_fit(
        readonly(available),
        readonly(requests),
        readonly(replicas),
        readonly(masks),
        upper,
        which,
        c0,
        c1,
        c2,
        order,
        _NO_NODE_ORDER,
        _NO_LENGTHS,
        bound_it,
        placement,
        info,
        _mark(n_nodes),
        trio_scratch(),
        columns,
        fits,
        flags,
        totals,
        available.copy(),  # what first-fit consumes (numpy's copy: one memcpy)
        *_small_scratch(requests, order),
        magics_buffer(n_cols),
    )
    limiting, work, bound, count, totals_bound = info.tolist()
    if not bound_it:
        return Packing(sets, placement, -1, limiting, work), None
    if bound < 0:  # first-fit reached upper
        return Packing(sets, placement, upper, limiting, work), None
    if count < 0:
        return Packing(sets, placement, bound, limiting, work), None
    pool = Pool(flags[1], count, count == n_nodes, totals_bound)
    return Packing(sets, placement, pool.bound, limiting, work, count), pool


def first_fit_sets(available: object, requests: object, replicas: object, masks: object, upper: object) -> Packing:
    """Karmada's First-Fit: complete sets placed one after another, exactly as Go does.

    MUTATES `available` (int64[N, K], C-contiguous, writable): the consumption of every
    complete set, and of a set that failed part-way, stays in it. `placement` counts the
    complete sets only. All replicas 0: `Packing(upper, zeros)`.
    """
    p = problem(available, requests, replicas, masks, upper, in_place=True)
    return karmada_first_fit(p.available, p.requests, p.replicas, p.masks, p.upper)


def first_fit_bounded(available: object, requests: object, replicas: object, masks: object, upper: object) -> Packing:
    """`first_fit_sets` (consuming `available` the same way) with `bound` filled in: the
    bound is taken on a copy made before packing, the arguments are checked once."""
    from .fit import staged_bound  # the Python wrappers may call across modules

    p = problem(available, requests, replicas, masks, upper, in_place=True)
    before = readonly(p.available.copy())
    packing = karmada_first_fit(p.available, p.requests, p.replicas, p.masks, p.upper)
    bound = staged_bound(
        before, p.requests, p.replicas, p.masks, p.upper, packing.sets, packing.limiting, first_fit=True
    )
    return packing._replace(bound=bound)


def first_fit_with_bound(
    available: object,
    requests: object,
    replicas: object,
    masks: object,
    upper: object,
    by_column: np.ndarray | None = None,
) -> Packing:
    """`first_fit_bounded` on a copy: `available` is not consumed (the snapshot's columns),
    and first-fit with the bound's first stages is one call (`staged_first_fit`; `by_column`:
    `column_layout(available)`, if the caller keeps it)."""
    from .fit import full_stage  # the Python wrappers may call across modules

    p = problem(available, requests, replicas, masks, upper, in_place=False)
    packing, pool = staged_first_fit(p.available, p.requests, p.replicas, p.masks, p.upper, True, by_column)
    if pool is None or packing.bound <= packing.sets:
        return packing
    return packing._replace(bound=full_stage(p.available, p.requests, p.replicas, p.masks, p.upper, pool))
