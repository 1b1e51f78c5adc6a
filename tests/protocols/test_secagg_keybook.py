"""The bulk key agreements, sealed shares and masks of a SecAgg round: each value is the
one a client computes alone with the primitives of ``crypto`` (both ends of a pair
included), and a round is the same bytes on one worker process or two."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from privsim.kit.secagg.crypto import KeyPair, agree, expand, open_share
from privsim.kit.secagg.graph import harary
from privsim.kit.secagg.keybook import SECRET_WORDS, KeyBook, neighbour_matrix, share_book
from privsim.kit.secagg.maths import pack_records
from privsim.kit.secagg.pool import Inline, Processes
from privsim.sim.keystream import KeyStream
from tests.processes import alive

N, K, D = 40, 8, 33


def _book(bits: int = 32, executor=None, **kw) -> tuple[KeyBook, np.ndarray, object]:
    graph = harary(N, K, np.random.default_rng(7))
    secrets = KeyStream(bytes(range(16)), "secrets").words(np.arange(N), 0, SECRET_WORDS)
    shares = share_book(secrets, graph, 5, KeyStream(bytes(16), "shamir"))
    book = KeyBook(
        secrets, graph, dimension=D, bits=bits, executor=executor or Inline(), shares=shares, **kw
    )
    return book, secrets, graph


def _pairs(secrets: np.ndarray, u: int) -> tuple[KeyPair, KeyPair, bytes]:
    raw = np.asarray(secrets[u], dtype="<u8").tobytes()
    return KeyPair.from_secret(raw[:32]), KeyPair.from_secret(raw[32:64]), raw[64:80]


def test_both_ends_of_every_sampled_pair_derive_the_books_value():
    """DH commutativity, checked with each end's own two-sided computation."""
    book, secrets, graph = _book()
    rng = np.random.default_rng(1)
    for u in rng.choice(N, size=6, replace=False).tolist():
        for v in rng.choice(graph.neighbours(u), size=3, replace=False).tolist():
            cu, su, _ = _pairs(secrets, u)
            cv, sv, _ = _pairs(secrets, v)
            assert book.public(b"c", u) == cu.public and book.public(b"s", v) == sv.public
            for kind, mine, theirs in ((b"c", cu, cv), (b"s", su, sv)):
                from_u = agree(mine.secret, theirs.public, kind)
                from_v = agree(theirs.secret, mine.public, kind)
                assert from_u == from_v
                peers = np.array([v])
                view = book.directory(u, kind, peers, theirs.public)
                assert view.agree(peers) == [from_u]
                back = book.directory(v, kind, np.array([u]), mine.public)
                assert back.agree(np.array([u])) == [from_v]


def test_a_key_that_is_not_the_peers_own_is_agreed_on_the_spot():
    book, secrets, graph = _book()
    u, v = 0, int(graph.neighbours(0)[0])
    stranger = KeyPair.from_secret(bytes(range(40, 72)))
    view = book.directory(u, b"s", np.array([v]), stranger.public)
    su = _pairs(secrets, u)[1]
    assert view.agree(np.array([v])) == [agree(su.secret, stranger.public, b"s")]
    assert book.extra_agreements == 1


def test_sealed_shares_open_to_the_clients_records():
    book, secrets, graph = _book()
    u = 3
    peers = graph.neighbours(u)
    c_blob = b"".join(book.public(b"c", v) for v in peers.tolist())
    holders, shares = book._shares.shares(u)  # type: ignore[union-attr]
    rows = shares[holders != u]
    records = pack_records(u, peers, rows)
    blob = book.directory(u, b"c", peers, c_blob).seal(peers, records)
    assert len(blob) == peers.size * 96
    cu = _pairs(secrets, u)[0]
    for j, v in enumerate(peers.tolist()):
        cv = _pairs(secrets, v)[0]
        key = agree(cv.secret, cu.public, b"c")  # the receiver's own agreement
        plain = open_share(AESGCM(key), u, v, blob[96 * j : 96 * (j + 1)])
        assert plain == records[j].tobytes()
    # a stranger's key: sealed on the spot, under the agreed key
    stranger = KeyPair.from_secret(bytes(range(40, 72)))
    one = book.directory(u, b"c", peers[:1], stranger.public).seal(peers[:1], records[:1])
    key = agree(stranger.secret, cu.public, b"c")
    assert open_share(AESGCM(key), u, int(peers[0]), one) == records[0].tobytes()


@pytest.mark.parametrize("bits", [20, 32, 48, 64])
@pytest.mark.parametrize("precomputed", [True, False])
def test_masks_are_the_sum_of_the_expanded_seeds(bits, precomputed):
    """PRG(b_u) + Σ Δ_{u,v} PRG(s_{u,v}) over the peers given, mod 2^b, as the paper's
    client computes it one seed at a time (some neighbours left out)."""
    book, secrets, graph = _book(bits, masks=precomputed)
    mod = np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(2**64 - 1)
    for u in (0, 17, 39):
        peers = graph.neighbours(u)[[0, 2, 3, 5, 7]]
        s_blob = b"".join(book.public(b"s", v) for v in peers.tolist())
        got = book.directory(u, b"s", peers, s_blob).masks(peers) & mod
        _, su, b_seed = _pairs(secrets, u)
        want = expand(b_seed, D, bits).copy()
        for v in peers.tolist():
            seed = agree(su.secret, _pairs(secrets, v)[1].public, b"s")
            if u > v:
                want += expand(seed, D, bits)
            else:
                want -= expand(seed, D, bits)
        assert np.array_equal(got, want & mod)


def test_the_book_counts_the_pairs_used_once():
    book, _, graph = _book()
    assert book.agreements == 0
    u = 5
    peers = graph.neighbours(u)
    blob = b"".join(book.public(b"c", v) for v in peers.tolist())
    book.directory(u, b"c", peers, blob).agree(peers)
    for v in peers.tolist():  # the other ends use the same pairs
        book.directory(v, b"c", np.array([u]), book.public(b"c", u)).agree(np.array([u]))
    assert book.agreements == K


def test_the_complete_graphs_neighbours():
    graph = harary(6, 5, np.random.default_rng(0))
    assert neighbour_matrix(graph).tolist() == [[v for v in range(6) if v != u] for u in range(6)]


def test_bulk_results_are_the_same_bytes_on_two_worker_processes():
    one, _, _ = _book(48)
    pool = Processes(2)
    try:
        two, _, graph = _book(48, executor=pool)
        for u in range(N):
            peers = graph.neighbours(u)
            for kind in (b"c", b"s"):
                assert two.public(kind, u) == one.public(kind, u)
            blob = b"".join(one.public(b"s", v) for v in peers.tolist())
            a = one.directory(u, b"s", peers, blob)
            b = two.directory(u, b"s", peers, blob)
            assert a.agree(peers) == b.agree(peers)
            assert np.array_equal(a.masks(peers[1:]), b.masks(peers[1:]))
        assert np.array_equal(one._sealed.result(), two._sealed.result())
    finally:
        pool.close()


def test_a_failing_task_reaches_its_reader():
    pool = Processes(1)
    try:
        future = pool.submit("public_keys", np.zeros((2, 5), dtype=np.uint8))  # not 32 bytes
        with pytest.raises(RuntimeError, match="worker process failed"):
            future.result(timeout=60)
        assert pool.submit(
            "mask_sums", None, np.zeros((1, 0, 16), np.uint8), np.zeros((1, 0), np.int8), 4, 8
        ).result(timeout=60).shape == (1, 4)
    finally:
        pool.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_end_when_their_parent_is_killed():
    script = (
        "import json, sys, time\n"
        "from privsim.kit.secagg.pool import Processes\n"
        "pool = Processes(2)\n"
        "print(json.dumps([w.pid for w in pool._workers]), flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        workers = json.loads(parent.stdout.readline())
        assert len(workers) == 2 and all(alive(w) for w in workers)
        time.sleep(1.0)  # let them reach die_with_parent
        parent.send_signal(signal.SIGKILL)  # no chance to stop its workers itself
        parent.wait()
        deadline = time.monotonic() + 30
        while any(alive(w) for w in workers):
            assert time.monotonic() < deadline, "the workers outlived their parent"
            time.sleep(0.05)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_closing_at_once_stops_the_workers_and_fails_what_is_left():
    pool = Processes(2)
    secrets = np.frombuffer(bytes(range(32)) * 2000, dtype=np.uint8).reshape(2000, 32)
    futures = [pool.submit("public_keys", secrets) for _ in range(6)]
    workers = [w.pid for w in pool._workers]
    started = time.monotonic()
    pool.close(abort=True)
    assert time.monotonic() - started < 30
    assert not any(alive(w) for w in workers)
    assert all(f.done() for f in futures)
    assert any(f.cancelled() for f in futures)
    late = pool.submit("public_keys", secrets[:1])
    with pytest.raises(RuntimeError, match="stopped"):
        late.result(timeout=1)
