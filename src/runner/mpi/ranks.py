# One rank of a collective on Open MPI, timed as the OSU micro-benchmarks time it, for
# `orchestrate run`: the MPI side of a workload with `implementation = "open-mpi"`.
#
# mpirun starts it on every rank's node as `python3 -c <this file> SETTINGS`, the settings
# one JSON object (the controller passes the text itself, so no node needs a copy). It times what the worker's ranks time, the
# same way: warm-up iterations, then each iteration timed alone with an untimed barrier after
# it; with a duration the count is rank 0's warm-up pace, shared. After the timed iterations
# one more, untimed, is checked on every rank: a wrong result fails the point. Rank 0 prints
# one record per rank as a JSON line, in the worker's record format.
import array
import json
import math
import sys
import time
import types

from mpi4py import MPI

# The most timed iterations a duration may ask for (the worker's bound).
MAX_ITERATIONS = 10_000_000


def parse():
    """The point's settings: one JSON object, the program's only argument."""
    if len(sys.argv) != 2:
        raise SystemExit("usage: ranks.py '{\"pattern\": ..., \"size\": ..., ...}'")
    given = json.loads(sys.argv[1])
    a = types.SimpleNamespace(
        warmup=10, iterations=None, duration=None, grid=None, periodic=False, root=0
    )
    for key, v in given.items():
        setattr(a, key, v)
    for key in ("pattern", "algorithm", "size", "schema"):
        if not hasattr(a, key):
            raise SystemExit(f"the settings lack {key!r}")
    if a.pattern not in ("allreduce", "alltoall", "bcast", "halo"):
        raise SystemExit(f"no collective {a.pattern!r}")
    if (a.iterations is None) == (a.duration is None):
        raise SystemExit("give iterations or a duration")
    return a


def value(rank, i):
    # Small integers: every order of summing them gives the same float.
    return float((rank * 7 + i) % 13)


def byte(src, dst, i):
    return (src * 31 + dst * 17 + i) % 251


class Allreduce:
    def __init__(self, comm, size, algorithm):
        n, r = comm.Get_size(), comm.Get_rank()
        self.count = size // 4
        self.comm = comm
        self.send = array.array("f", (value(r, i) for i in range(self.count)))
        self.recv = array.array("f", bytes(4 * self.count))
        # Open MPI's ring falls back to recursive doubling below one element per rank.
        self.algorithm = "recursive-doubling" if algorithm == "ring" and self.count < n else algorithm

    def iterate(self):
        self.comm.Allreduce([self.send, MPI.FLOAT], [self.recv, MPI.FLOAT], op=MPI.SUM)

    def clear(self):
        self.recv = array.array("f", bytes(4 * self.count))

    def check(self):
        n = self.comm.Get_size()
        for i in range(self.count):
            want = sum(value(r, i) for r in range(n))
            if self.recv[i] != want:
                return f"element {i} is {self.recv[i]}, not {want}"
        return None


class Alltoall:
    def __init__(self, comm, size, algorithm):
        n, r = comm.Get_size(), comm.Get_rank()
        self.comm, self.size, self.algorithm = comm, size, algorithm
        self.send = bytearray(byte(r, d, i) for d in range(n) for i in range(size))
        self.recv = bytearray(size * n)

    def iterate(self):
        self.comm.Alltoall([self.send, MPI.BYTE], [self.recv, MPI.BYTE])

    def clear(self):
        self.recv = bytearray(len(self.recv))

    def check(self):
        n, r = self.comm.Get_size(), self.comm.Get_rank()
        for s in range(n):
            block = self.recv[s * self.size:(s + 1) * self.size]
            if block != bytearray(byte(s, r, i) for i in range(self.size)):
                return f"the block from rank {s} differs"
        return None


class Bcast:
    def __init__(self, comm, size, algorithm, root):
        self.comm, self.size, self.algorithm, self.root = comm, size, algorithm, root
        self.want = bytearray(byte(root, 0, i) for i in range(size))
        self.buf = bytearray(self.want) if comm.Get_rank() == root else bytearray(size)

    def iterate(self):
        self.comm.Bcast([self.buf, MPI.BYTE], root=self.root)

    def clear(self):
        if self.comm.Get_rank() != self.root:
            self.buf = bytearray(self.size)

    def check(self):
        return None if self.buf == self.want else "the message differs from the root's"


class Halo:
    """Four neighbours on a ROWSxCOLS grid, all sends and receives posted at once."""

    def __init__(self, comm, size, grid, periodic):
        n, r = comm.Get_size(), comm.Get_rank()
        rows, cols = grid
        if rows * cols != n:
            raise SystemExit(f"a {rows}x{cols} grid does not hold {n} ranks")
        self.comm, self.size = comm, size
        self.algorithm = f"{rows}x{cols} {'periodic' if periodic else 'open'}"
        row, col = divmod(r, cols)

        def at(dr, dc):
            rr, cc = row + dr, col + dc
            if periodic:
                rr, cc = rr % rows, cc % cols
            elif not (0 <= rr < rows and 0 <= cc < cols):
                return None
            other = rr * cols + cc
            return None if other == r else other

        # (neighbour, tag of what goes there, tag of what comes back): a message sent west
        # arrives as the neighbour's east face.
        ways = [((0, -1), 0, 1), ((0, 1), 1, 0), ((-1, 0), 2, 3), ((1, 0), 3, 2)]
        self.faces = []
        for (dr, dc), out_tag, in_tag in ways:
            other = at(dr, dc)
            if other is not None:
                out = bytearray(byte(r, other, i + out_tag) for i in range(size))
                self.faces.append((other, out_tag, in_tag, out, bytearray(size)))

    def iterate(self):
        reqs = []
        for other, _, in_tag, _, inbox in self.faces:
            reqs.append(self.comm.Irecv([inbox, MPI.BYTE], source=other, tag=in_tag))
        for other, out_tag, _, out, _ in self.faces:
            reqs.append(self.comm.Isend([out, MPI.BYTE], dest=other, tag=out_tag))
        MPI.Request.Waitall(reqs)

    def clear(self):
        for face in self.faces:
            face[4][:] = bytearray(self.size)

    def check(self):
        r = self.comm.Get_rank()
        for other, _, in_tag, _, inbox in self.faces:
            if inbox != bytearray(byte(other, r, i + in_tag) for i in range(self.size)):
                return f"the face from rank {other} differs"
        return None


def collective(a, comm):
    if a.pattern == "allreduce":
        if a.size <= 0 or a.size % 4:
            raise SystemExit(f"an allreduce sums 4-byte floats: {a.size} B is not a multiple of 4")
        return Allreduce(comm, a.size, a.algorithm)
    if a.pattern == "alltoall":
        return Alltoall(comm, a.size, a.algorithm)
    if a.pattern == "bcast":
        return Bcast(comm, a.size, a.algorithm, a.root)
    rows, _, cols = (a.grid or "").partition("x")
    if not rows:
        dims = MPI.Compute_dims(comm.Get_size(), 2)
        rows, cols = dims[0], dims[1]
    return Halo(comm, a.size, (int(rows), int(cols)), a.periodic)


def implementation():
    import mpi4py

    library = MPI.Get_library_version().split(",")[0].strip()
    return f"{library} (mpi4py {mpi4py.__version__})"


def main():
    a = parse()
    comm = MPI.COMM_WORLD
    n, r = comm.Get_size(), comm.Get_rank()
    coll = collective(a, comm)
    comm.Barrier()

    warmup = max(a.warmup, 1) if a.duration is not None else a.warmup
    t = MPI.Wtime()
    for _ in range(warmup):
        coll.iterate()
        comm.Barrier()
    pace = (MPI.Wtime() - t) / max(warmup, 1)
    if a.duration is not None:
        mine = min(max(math.ceil(a.duration / max(pace, 1e-9)), 1), MAX_ITERATIONS)
        count = comm.bcast(mine, root=0)
    else:
        count = a.iterations

    times = []
    start = time.time_ns()
    for _ in range(count):
        t0 = MPI.Wtime()
        coll.iterate()
        times.append(MPI.Wtime() - t0)
        comm.Barrier()
    end = time.time_ns()

    # The checked iteration, untimed, into cleared output.
    coll.clear()
    coll.iterate()
    wrong = coll.check()
    comm.Barrier()

    us = [x * 1e6 for x in sorted(times)]
    at = lambda q: us[round((len(us) - 1) * q)]
    record = {
        "schema": a.schema,
        "pattern": a.pattern,
        "protocol": "tcp",
        "role": "rank",
        "local_addr": MPI.Get_processor_name(),
        "peer_addr": "",
        "size_bytes": a.size,
        "trial": 0,
        "messages": count,
        # What each rank put on the wire is the library's business: not counted here.
        "bytes": 0,
        "start_unix_ns": start,
        "end_unix_ns": end,
        "elapsed_ns": round(sum(times) * 1e9),
        "latency_us": sum(us) / len(us),
        "latency_p50_us": at(0.5),
        "latency_p90_us": at(0.9),
        "latency_p99_us": at(0.99),
        "latency_max_us": us[-1],
        "rank": r,
        "ranks": n,
        "algorithm": coll.algorithm,
        "implementation": implementation(),
    }
    if wrong is not None:
        record["error"] = f"rank {r}: the {a.pattern} of {a.size} B gave a wrong result: {wrong}"
    records = comm.gather(record, root=0)
    if r == 0:
        for rec in records:
            print(json.dumps(rec), flush=True)
    return 0 if wrong is None else 1


sys.exit(main())
