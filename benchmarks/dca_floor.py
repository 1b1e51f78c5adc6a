"""The machine's floor for one encrypted DCA round: the least work any implementation
must do, timed with the raw primitives on one core and divided by the cores the round may
use (its worker processes: ``PRIVSIM_ROUND_PROCESSES``, default the usable cores) — the
time of a perfectly parallel implementation.

    python benchmarks/dca_floor.py                 # N = 10^5, d = 10^4, M = 10, both share modes
    python benchmarks/dca_floor.py --n 10000 --d 1000

Per client, with full shares: (M − 1)·d share words from AES-CTR (the keystream the
round uses) and the last share completed, then M messages of d·8 bytes sealed and
opened with AES-GCM (a fresh AESGCM object per message, as the channel does). With
seed-compressed shares: M − 1 seeds, M − 1 expansions of d words by AES-256-CTR, each
added into its node's sum and subtracted from the correction, then one d·8-byte message
and M − 1 32-byte seeds sealed and opened. Data,
noise, the simulation engine and the nodes' sums are not in the floor. A sample of
clients is timed and scaled to N; the figures see whatever load the machine has when
they run, so compare a floor only with cells measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import numpy as np
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from privsim.kit.securesum.job import CHUNK_BYTES
from privsim.kit.securesum.maths import complete_shares
from privsim.kit.securesum.pool import workers
from privsim.kit.securesum.seeded import SEED_WORDS, add_expansions
from privsim.sim.keystream import KeyStream

#: Encoded header of a share message, about this many bytes before its values.
HEADER_BYTES = 24


@dataclass(frozen=True, slots=True)
class Floor:
    """Seconds for N clients: share generation, AES-GCM, and both, with the work spread
    perfectly over ``threads`` cores."""

    generate: float
    aead: float
    total: float
    threads: int
    sample: int
    aead_bytes_per_second_per_thread: float


def _client_work(
    clients: np.ndarray, m: int, d: int, shares: str, keys: list[bytes], gen: bool, aead: bool
) -> float:
    stream = KeyStream(bytes(16), "floor")
    x = np.zeros((clients.size, d), dtype=np.uint64)
    block = np.empty((clients.size, m, d), dtype=np.uint64)
    if gen:
        if shares == "seeded":
            seeds = stream.words(clients, 0, SEED_WORDS * (m - 1)).reshape(
                clients.size, m - 1, SEED_WORDS
            )
            block[:, 0] = add_expansions(x, seeds, np.zeros((m - 1, d), dtype=np.uint64))
        else:
            stream.words_into(clients, 0, block.reshape(clients.size, m * d)[:, : (m - 1) * d])
            complete_shares(x, block)
    sealed_bytes = 0
    if aead:
        sizes = [HEADER_BYTES + 8 * d] + (
            [HEADER_BYTES + 8 * SEED_WORDS] * (m - 1)
            if shares == "seeded"
            else [HEADER_BYTES + 8 * d] * (m - 1)
        )
        buffers = {s: (bytearray(s), bytearray(s + 16), bytearray(s)) for s in set(sizes)}
        for row, client in enumerate(clients.tolist()):
            for k, size in enumerate(sizes):
                plain, sealed, opened = buffers[size]
                if size > HEADER_BYTES + 8 * SEED_WORDS or shares == "full":
                    plain[HEADER_BYTES:] = block[row, k].data.cast("B")
                aes = AESGCM(keys[(client + k) % len(keys)])
                nonce = client.to_bytes(12, "big")
                aad = f"client-{client}>compute-{k}".encode()
                aes.encrypt_into(nonce, plain, aad, sealed)
                aes.decrypt_into(nonce, sealed, aad, opened)
                sealed_bytes += size
    return float(sealed_bytes)


def measure(n: int, d: int, m: int, shares: str, *, seconds: float = 3.0) -> Floor:
    """Time the floor's parts on one core for a sample sized to take about ``seconds``
    each (the best of three passes: the least the machine's load allowed), scaled to N
    and divided by the cores a round may use."""
    keys = [os.urandom(32) for _ in range(64)]
    per_client_bytes = 8 * d * m
    sample = int(min(n, max(4, seconds * 3e8 / max(per_client_bytes, 1))))
    step = max(1, CHUNK_BYTES // (8 * m * d))  # the round's chunks
    chunks = [np.arange(lo, min(sample, lo + step)) for lo in range(0, sample, step)]
    cores = workers()

    def timed(gen: bool, aead: bool) -> tuple[float, float]:
        best, sealed = float("inf"), 0.0
        for _ in range(3):
            start = time.perf_counter()
            sealed = sum(_client_work(c, m, d, shares, keys, gen, aead) for c in chunks)
            best = min(best, time.perf_counter() - start)
        return best, sealed

    _client_work(chunks[0][:2], m, d, shares, keys, True, True)  # warm-up
    gen_s, _ = timed(True, False)
    aead_s, sealed = timed(False, True)
    total_s, _ = timed(True, True)
    scale = n / sample / cores
    return Floor(
        generate=gen_s * scale,
        aead=aead_s * scale,
        total=total_s * scale,
        threads=cores,
        sample=sample,
        aead_bytes_per_second_per_thread=sealed / aead_s,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=10**5)
    parser.add_argument("--d", type=int, default=10**4)
    parser.add_argument("--m", type=int, default=10)
    args = parser.parse_args()
    print(
        f"N = {args.n}, d = {args.d}, M = {args.m}, {workers()} cores; load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'shares':<8}{'generate s':>12}{'AES-GCM s':>11}{'floor s':>9}{'GCM MB/s/thread':>17}")
    for shares in ("full", "seeded"):
        f = measure(args.n, args.d, args.m, shares)
        print(
            f"{shares:<8}{f.generate:>12.1f}{f.aead:>11.1f}{f.total:>9.1f}"
            f"{f.aead_bytes_per_second_per_thread / 1e6:>17.0f}"
        )


if __name__ == "__main__":
    main()
