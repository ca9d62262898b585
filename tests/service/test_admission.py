"""service.admission: the memory budget calls reserve from, and the pool that counts them."""

from __future__ import annotations

import threading
import time

from estimator.service.admission import FairPool, MemoryBudget, Reservation

MB = 2**20


def test_reservations_never_pass_the_budget_and_give_everything_back():
    budget = MemoryBudget(64 * MB)
    calls = [Reservation(budget) for _ in range(3)]
    assert calls[0].grow(MB // 2) and calls[1].grow(MB // 2)  # small calls
    assert calls[0].grow(30 * MB)  # becomes large: 3/4 of the budget at most
    assert not calls[2].grow(40 * MB)
    assert budget.used == 31 * MB
    for call in calls:
        call.close()
    assert budget.used == 0 and budget.large_in_flight == 0


def test_only_one_large_call_at_a_time_and_large_calls_leave_a_quarter_to_small_ones():
    budget = MemoryBudget(64 * MB, large_pause=0)
    first, second, small = Reservation(budget), Reservation(budget), Reservation(budget)
    assert first.grow(2 * MB)  # above 1/64 of the budget: large
    assert not second.grow(2 * MB), "a second large call waits for none: it is refused"
    assert first.grow(40 * MB)
    assert not first.grow(10 * MB), "a large call may fill 3/4 of the budget"
    assert small.grow(MB // 2) and small.grow(MB // 2)  # small ones still fit
    first.close()
    assert second.grow(2 * MB)
    second.close()
    small.close()
    assert budget.used == 0 and budget.large_in_flight == 0


def test_large_calls_one_after_another_do_not_wait():
    budget = MemoryBudget(64 * MB)
    for _ in range(3):
        call = Reservation(budget)
        assert call.grow(2 * MB)
        time.sleep(0.05)
        call.close()
        assert budget.large_open()


def test_after_a_large_call_others_were_turned_away_for_the_next_waits_three_times_as_long():
    budget = MemoryBudget(64 * MB)
    first = Reservation(budget)
    assert first.grow(2 * MB)
    assert not Reservation(budget).grow(2 * MB)  # contended
    time.sleep(0.2)
    first.close()
    assert not budget.large_open() and not Reservation(budget).grow(2 * MB)
    assert Reservation(budget).grow(MB // 2), "small calls do not wait"
    time.sleep(0.7)
    assert budget.large_open() and Reservation(budget).grow(2 * MB)


def test_a_call_no_larger_than_an_ordinary_one_on_its_member_is_never_large():
    budget = MemoryBudget(64 * MB)  # 1/64: 1 MiB
    taken = Reservation(budget)
    assert taken.grow(2 * MB) and budget.large_in_flight == 1  # the one large place is taken
    ordinary = [Reservation(budget) for _ in range(3)]
    for call in ordinary:
        call.allow_ordinary(10 * MB)
    assert all(call.grow(9 * MB) for call in ordinary), "ordinary on this member: not large, not refused"
    assert budget.large_in_flight == 1
    beyond = Reservation(budget)
    beyond.allow_ordinary(10 * MB)
    assert not beyond.grow(11 * MB), "beyond ordinary it is large again"
    assert not Reservation(budget).grow(2 * MB), "before it is allowed (a request's decoding), 1/64 is large"
    for call in [taken, *ordinary]:
        call.close()
    assert budget.used == 0 and budget.large_in_flight == 0


def test_no_budget_refuses_nothing():
    budget = MemoryBudget(0)
    assert Reservation(budget).grow(10**12)


def test_the_pool_counts_what_it_holds_queued_or_running():
    pool = FairPool(1, key_of=lambda args: None)
    release = threading.Event()
    futures = [pool.submit(release.wait, 10) for _ in range(3)]
    assert pool.held == 3
    release.set()
    for future in futures:
        future.result(10)
    assert pool.held == 0
    failing = pool.submit(lambda: 1 / 0)
    assert isinstance(failing.exception(10), ZeroDivisionError)
    assert pool.held == 0
    pool.shutdown()


def test_the_pool_takes_work_from_each_connection_in_turn():
    pool = FairPool(1, key_of=lambda args: args[0])
    release, ran = threading.Event(), []
    pool.submit(lambda key: release.wait(10), "flood")  # the one worker is busy
    for i in range(10):
        pool.submit(ran.append, "flood")
    pool.submit(ran.append, "scheduler")
    release.set()
    deadline = time.monotonic() + 10
    while len(ran) < 11 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ran.index("scheduler") <= 1, "the other connection waits for one call of the flood, not for ten"
    pool.shutdown()


def test_the_pool_finds_the_connection_of_a_grpc_call():
    class Call:
        def peer(self):
            return "ipv4:127.0.0.1:4242"

    class Event:
        call = Call()

    from estimator.service.admission import connection_of

    assert connection_of((print, Event(), "state")) == "ipv4:127.0.0.1:4242"
    assert connection_of(("anything",)) is None


def test_a_caller_waiting_for_each_answer_is_served_by_one_worker_and_work_at_once_by_several():
    pool = FairPool(4, key_of=lambda args: None)
    try:
        # One call at a time: the most recently idle worker takes the next (its caches warm).
        threads = {pool.submit(threading.get_ident).result(timeout=5) for _ in range(20)}
        assert len(threads) == 1
        # Work that waits for other work: the idle workers are woken for it, all four at once.
        together = threading.Barrier(4)
        running = [pool.submit(lambda: together.wait(timeout=5) is not None and threading.get_ident())
                   for _ in range(4)]
        assert len({future.result(timeout=5) for future in running}) == 4
    finally:
        pool.shutdown(wait=True)
