# SPDX-License-Identifier: MIT
"""torch.distributed.all_reduce, reduce_scatter_tensor and
all_gather_into_tensor as a framework calls them, for
tests/bench/torch-allreduce.sh (one process per GPU under torchrun).

  torchrun --nproc-per-node N torch_allreduce.py run --label L --out FILE.json
           [--coll all_reduce|reduce_scatter|all_gather] [--pin]
      every dtype PyTorch offers x sum, min, max, avg (and product; the
      all-gather: no op) at odd and even counts (of each rank's block for
      the reduce-scatter and all-gather): the results' SHA-256 per rank,
      rank 0's small results themselves, and the largest error against a
      float64 reference; then bfloat16 sum from 1 KiB to 256 MiB (the whole
      buffer: nccl-tests' size), eager and captured in a CUDA graph,
      microseconds per call (the median of BLOCKS timed blocks; every
      block's figure kept).  --pin: each rank first binds itself to its
      own CPUs (pin_plan; one "# pin:" line per rank).
  python3 torch_allreduce.py compare NCCL.json PENNY.json OUTBASE
      results identical or not per case, the timings side by side and the
      penny/NCCL ratio per size; writes OUTBASE.txt and OUTBASE.tsv.
  python3 torch_allreduce.py rounds --out OUTBASE --nccl N1.json N2.json ...
                                    --penny P1.json P2.json ...
      launches of each side alternated in rounds (round r: Nr and Pr):
      results checked per round as compare does; per size and mode each
      side's median over its launches and their range, the ratio of the
      medians, and the per-round ratios' min, median and max; writes
      OUTBASE.txt and OUTBASE.tsv.  Exit (compare's rules too): 1 when a
      round's results differ or a graph replay was wrong, 0 otherwise (a
      ratio over the goal is reported, not an error), 2 on unusable files.
  torchrun --nproc-per-node N torch_allreduce.py ab --out OUTBASE [--coll C]
           [--rounds R] [--pin]  (under LD_PRELOAD=libpenny-nccl.so)
      NCCL and penny in one process: the default group is penny's, a second
      group over the same ranks is made with PENNY_NCCL=off (the interposer
      reads it at each communicator's set-up) and is NCCL's; per size, R
      rounds of one timed block on each, alternated (P N, N P, ...), eager
      and in CUDA graphs, so that what moves eager times from one process
      to the next (up to 2x) moves both sides alike.  --swap: penny on the
      second group, NCCL on the default one (what differs between the two
      groups themselves shows as a ratio that follows the group).  --control:
      NCCL on both groups (the "penny" side too): the A/B's ratio without
      penny, what the bench itself reads between the two groups.  Per size and mode:
      each side's median block, the ratio of the medians and the per-round
      ratios' min, median and max; rank 0 writes OUTBASE.txt, .tsv, .json.
"""
import argparse
import datetime
import hashlib
import json
import os
import statistics
import sys
import time


# Each size is timed as BLOCKS blocks of calls back to back on the stream,
# an event between blocks (no host synchronisation inside): the median
# block's microseconds per call are reported, so that one stall of a few
# milliseconds (seen on these machines for NCCL and penny alike, at random
# sizes) moves one block, not the figure.  Every block's figure is kept.
BLOCKS = 5
GOAL = 1.03  # penny/NCCL per size at most (issue 41)


def timed_blocks(torch, launch, launches, calls_per_launch):
    """launch() `launches` times in BLOCKS blocks; (median, [per block]) us per call."""
    nb = min(BLOCKS, launches)
    sizes = [launches // nb + (1 if i < launches % nb else 0) for i in range(nb)]
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(nb + 1)]
    ev[0].record()
    for i, k in enumerate(sizes):
        for _ in range(k):
            launch()
        ev[i + 1].record()
    ev[-1].synchronize()
    per = [ev[i].elapsed_time(ev[i + 1]) * 1000.0 / (sizes[i] * calls_per_launch) for i in range(nb)]
    return sorted(per)[nb // 2], [round(v, 3) for v in per]


def human(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


# ---- pin (inside torchrun, before CUDA is initialised) ----

def cpulist(text):
    """'0-3,8' -> [0, 1, 2, 3, 8] (the kernel's cpulist format)."""
    out = []
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def cpulist_text(cpus):
    """[0, 1, 2, 3, 8] -> '0-3,8'."""
    runs = []
    for c in sorted(cpus):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join("%d" % a if a == b else "%d-%d" % (a, b) for a, b in runs)


def sysread(root, path):
    try:
        with open(os.path.join(root, path)) as f:
            return f.read()
    except OSError:
        return None


def gpu_bdfs(root, env):
    """The PCI addresses of the GPUs CUDA numbers 0, 1, ... (its
    CUDA_VISIBLE_DEVICES choice: indices or GPU- UUIDs), from the driver's
    /proc/driver/nvidia/gpus; CUDA orders them by PCI address as the driver
    does when CUDA_DEVICE_ORDER=PCI_BUS_ID or all GPUs are one model (its
    default puts the fastest first).  [] when that cannot be told."""
    gpus = []
    try:
        names = sorted(os.listdir(os.path.join(root, "proc/driver/nvidia/gpus")))
    except OSError:
        return []
    for bdf in names:
        info = sysread(root, "proc/driver/nvidia/gpus/%s/information" % bdf) or ""
        f = dict((k.strip(), v.strip()) for k, _, v in (l.partition(":") for l in info.splitlines()))
        gpus.append((bdf.lower(), f.get("GPU UUID", ""), f.get("Model", "")))
    if len(set(g[2] for g in gpus)) > 1 and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        return []
    vis = env.get("CUDA_VISIBLE_DEVICES")
    if vis is None:
        return [g[0] for g in gpus]
    out = []
    for v in vis.split(","):
        v = v.strip()
        hit = [g for g in gpus if v.startswith("GPU-") and g[1].startswith(v)]
        if v.isdigit() and int(v) < len(gpus):
            hit = [gpus[int(v)]]
        if len(hit) != 1:
            return []
        out.append(hit[0][0])
    return out


def numa_node(root, bdf):
    v = (sysread(root, "sys/bus/pci/devices/%s/numa_node" % bdf) or "").strip()
    return int(v) if v.isdigit() else None  # -1: the machine does not say


def split_cpus(root, pool, k, m):
    """The k-th of m disjoint parts of the CPUs in pool: whole cores
    (thread_siblings_list) when there are m cores or more, else CPUs."""
    cores, seen = [], set()
    for c in sorted(pool):
        if c in seen:
            continue
        sib = cpulist(sysread(root, "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list" % c) or "")
        core = sorted((set(sib) & set(pool)) | {c})
        seen.update(core)
        cores.append(core)
    units = cores if len(cores) >= m else [[c] for c in sorted(pool)]
    n = len(units)
    return sorted(c for u in units[k * n // m:(k + 1) * n // m] for c in u)


def pin_plan(local, nlocal, allowed, root="/", env=None):
    """The CPUs local rank `local` of `nlocal` binds itself to, from
    `allowed` (the CPUs the process may use), disjoint from every other
    local rank's: the CPUs of its GPU's NUMA node shared out among the ranks
    whose GPUs are there, when every rank's GPU has a node
    (/sys/bus/pci/devices/BDF/numa_node, .../node/nodeN/cpulist) with a CPU
    for each; else all of `allowed` shared out.  (cpus, GPU's PCI address
    or None, NUMA node or None when not used); cpus [] when there are fewer
    CPUs than ranks."""
    env = os.environ if env is None else env
    allowed = sorted(allowed)
    bdfs = gpu_bdfs(root, env)
    gpu = bdfs[local] if local < len(bdfs) else None
    nodes = [numa_node(root, bdfs[i]) if i < len(bdfs) else None for i in range(nlocal)]
    if None not in nodes:
        ranks = {n: [i for i in range(nlocal) if nodes[i] == n] for n in set(nodes)}
        cpus = {n: sorted(set(cpulist(sysread(root, "sys/devices/system/node/node%d/cpulist" % n) or ""))
                          & set(allowed)) for n in ranks}
        if all(len(cpus[n]) >= len(ranks[n]) for n in ranks):
            n = nodes[local]
            return split_cpus(root, cpus[n], ranks[n].index(local), len(ranks[n])), gpu, n
    if len(allowed) < nlocal:
        return [], gpu, None
    return split_cpus(root, allowed, local, nlocal), gpu, None


def pin(rank, local, nlocal):
    """Binds this process to pin_plan's CPUs before CUDA or any thread is
    made (threads inherit it); prints the choice."""
    allowed = os.sched_getaffinity(0)
    cpus, gpu, node = pin_plan(local, nlocal, allowed)
    if not cpus:
        sys.exit("torch_allreduce: pin: %d CPUs for %d ranks" % (len(allowed), nlocal))
    os.sched_setaffinity(0, cpus)
    print("# pin: rank %d (local %d of %d, GPU %s): CPUs %s of %s, %s"
          % (rank, local, nlocal, gpu or "not known", cpulist_text(cpus), cpulist_text(allowed),
             "all shared out" if node is None else "NUMA node %d's" % node), flush=True)
    return gpu


# ---- run (inside torchrun) ----

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
          "complex64", "complex128"]
OPS = ["SUM", "MIN", "MAX", "AVG", "PRODUCT"]
COUNTS = [1, 7, 1000, 4097, 65537, 1048583]
KEEP = 65537  # rank 0 keeps results up to this count for the comparison


def make_input(torch, dt, rank, count, op):
    g = torch.Generator().manual_seed(1000003 * rank + 7919 * count + 17 * OPS.index(op) + 1)
    if dt == torch.bool:
        return torch.randint(0, 2, (count,), generator=g).to(torch.bool)
    if dt.is_floating_point or dt.is_complex:
        if op == "PRODUCT":  # near 1: products stay finite
            x = 1 + 0.01 * torch.randn(count, generator=g, dtype=torch.float64)
        else:
            x = torch.randn(count, generator=g, dtype=torch.float64)
        if dt.is_complex:
            y = torch.randn(count, generator=g, dtype=torch.float64)
            return torch.complex(x, y).to(dt)
        return x.to(dt)
    info = torch.iinfo(dt)
    lo, hi = (0, 3) if op == "PRODUCT" else (max(info.min, -100), min(info.max, 100))
    return torch.randint(lo, hi + 1, (count,), generator=g).to(dt)


def raw_bytes(torch, t):
    return t.contiguous().view(-1).view(torch.uint8).numpy().tobytes()


def reference(torch, dt, world, count, op):
    xs = [make_input(torch, dt, r, count, op) for r in range(world)]
    if dt == torch.bool:
        return None
    acc = torch.complex128 if dt.is_complex else torch.float64
    xs = [x.to(acc) for x in xs]
    if op == "SUM" or op == "AVG":
        out = sum(xs)
        if op == "AVG":
            out = out / world
    elif op == "PRODUCT":
        out = xs[0]
        for x in xs[1:]:
            out = out * x
    elif acc == torch.complex128:  # min/max of the real and imaginary parts
        # apart, as NCCL does when PyTorch hands complex as pairs of reals
        # (reduce_scatter_tensor takes complex min/max; all_reduce refuses)
        parts = torch.stack([torch.view_as_real(x) for x in xs])
        out = torch.view_as_complex((parts.min(0) if op == "MIN" else parts.max(0)).values.contiguous())
    elif op == "MIN":
        out = torch.stack(xs).min(0).values
    else:
        out = torch.stack(xs).max(0).values
    return out


def output(coll, world, x):
    """The call's output for input x: x itself for all_reduce (in place);
    one of x's world blocks for reduce_scatter; world x's for all_gather."""
    if coll == "all_reduce":
        return x
    return x.new_empty(x.numel() // world if coll == "reduce_scatter" else x.numel() * world)


def captured(torch, launch, per):
    """A CUDA graph of per launch() calls, after 3 warm-up calls on a side
    stream, as PyTorch asks.  The caller keeps the only reference: a graph
    kept past its use held a launch at exit (destroy_process_group)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            launch()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(per):
            launch()
    return g


def collective(dist, coll, x, y, op=None, group=None):
    """The call from input x into y (output()) on group (None: the default); y."""
    kw = {} if op is None else {"op": op}
    if group is not None:
        kw["group"] = group
    if coll == "all_reduce":
        dist.all_reduce(x, **kw)
    elif coll == "reduce_scatter":
        dist.reduce_scatter_tensor(y, x, **kw)
    else:
        dist.all_gather_into_tensor(y, x, **({} if group is None else {"group": group}))
    return y


def run(args):
    pinned = None  # the GPU's PCI address pin() took
    if args.pin:  # before torch is imported: no thread is made yet
        rank = int(os.environ["RANK"])
        pinned = pin(rank, int(os.environ.get("LOCAL_RANK", rank)),
                     int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"])))
    import torch
    import torch.distributed as dist

    global BLOCKS
    BLOCKS = args.blocks

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    if pinned:  # pin()'s guess of the GPU against CUDA's, where PyTorch tells it
        p = torch.cuda.get_device_properties(local)
        if hasattr(p, "pci_bus_id"):
            bdf = "%04x:%02x:%02x" % (p.pci_domain_id, p.pci_bus_id, p.pci_device_id)
            if not pinned.startswith(bdf):
                print("# pin: rank %d: CUDA's device %d is %s, not %s: the NUMA node may be the wrong one"
                      % (rank, local, bdf, pinned), flush=True)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=args.timeout),
                            device_id=dev)
    ops = {o: getattr(dist.ReduceOp, o) for o in OPS}
    coll = args.coll
    res = {"label": args.label, "coll": coll, "world": world, "torch": torch.__version__,
           "nccl": ".".join(str(v) for v in torch.cuda.nccl.version()),
           "preload": os.environ.get("LD_PRELOAD", ""), "check": {}, "eager": {}, "graph": {},
           "eager_blocks": {}, "graph_blocks": {}, "timing": "median of %d blocks" % BLOCKS}
    keep = {}
    # a first collective outside any timing: the communicator is made here
    w = torch.ones(1024, device=dev)
    dist.all_reduce(w)
    torch.cuda.synchronize()

    t0 = time.time()
    for name in DTYPES:
        dt = getattr(torch, name, None)
        if dt is None:
            continue
        for op in (OPS if coll != "all_gather" else ["SUM"]):
            for count in COUNTS:
                key = "%s %s %d" % (name, op, count)
                # the input: world blocks of count for the reduce-scatter
                whole = count * world if coll == "reduce_scatter" else count
                try:  # the same on every rank: an error here is the type's or op's
                    x = make_input(torch, dt, rank, whole, op).to(dev)
                    x = collective(dist, coll, x, output(coll, world, x),
                                   None if coll == "all_gather" else ops[op])
                    torch.cuda.synchronize()
                except Exception as e:  # what this PyTorch/NCCL does not offer
                    msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
                    res["check"][key] = {"error": msg}
                    continue
                host = x.cpu()
                h = hashlib.sha256(raw_bytes(torch, host)).hexdigest()
                hs = [None] * world
                dist.all_gather_object(hs, h)
                entry = {"sha256": h, "ranks_agree": len(set(hs)) == 1}
                if coll == "reduce_scatter":  # every rank's block: all of them compared
                    entry = {"sha256": hashlib.sha256("".join(hs).encode()).hexdigest(),
                             "ranks_agree": True}
                if rank == 0 and count <= 4097:
                    if coll == "all_gather":
                        ref = torch.cat([make_input(torch, dt, r, count, op) for r in range(world)])
                        ref = None if dt == torch.bool else \
                            ref.to(torch.complex128 if dt.is_complex else torch.float64)
                    else:
                        ref = reference(torch, dt, world, whole, op)
                    if ref is not None and coll == "reduce_scatter":
                        ref = ref[:count]  # rank 0's block
                    if ref is not None:
                        got = host.to(ref.dtype)
                        err = (got - ref).abs()
                        scale = ref.abs().clamp(min=1e-30)
                        entry["max_abs_err"] = float(err.max())
                        entry["max_rel_err"] = float((err / scale).max()) if not dt.is_complex else None
                if rank == 0 and count <= KEEP:
                    keep[key] = host
                res["check"][key] = entry
    res["check_seconds"] = round(time.time() - t0, 1)

    sizes = []
    b = args.min_bytes
    while b <= args.max_bytes:
        sizes.append(b)
        b *= 2
    for nbytes in sizes:
        # nbytes: the whole buffer (world blocks for reduce-scatter and all-gather)
        n = nbytes // 2 if coll == "all_reduce" else nbytes // 2 // world * world
        if n < world:
            continue
        nin = n // world if coll == "all_gather" else n
        x = torch.randn(nin, device=dev).to(torch.bfloat16)
        out = output(coll, world, x)  # made once: the timing is the call's alone
        iters = max(10, min(args.iters, int(2e9 // max(nbytes, 1) // 8)))
        for _ in range(5):
            collective(dist, coll, x, out)
        torch.cuda.synchronize()
        dist.barrier()
        med, per_block = timed_blocks(torch, lambda: collective(dist, coll, x, out), iters, 1)
        res["eager"][str(nbytes)] = med
        res["eager_blocks"][str(nbytes)] = per_block
        if args.graph:
            per = args.graph
            g = captured(torch, lambda: collective(dist, coll, x, out), per)
            torch.cuda.synchronize()
            # a replay reduces again: the captured calls must still be right
            y = torch.full((nin,), float(rank + 1), device=dev, dtype=torch.bfloat16)
            x.copy_(y)
            g.replay()
            torch.cuda.synchronize()
            if coll == "all_reduce":
                want = float(world * (world + 1) // 2) * world ** (per - 1)
                ok = bool(torch.isclose(x[:16].float(), torch.tensor(want, device=dev), rtol=0.02).all())
            elif coll == "reduce_scatter":  # from the same input at every call
                want = float(world * (world + 1) // 2)
                ok = bool(torch.isclose(out[:16].float(), torch.tensor(want, device=dev), rtol=0.02).all())
            else:  # block r from rank r: 1 first, world last
                ok = bool((out[:16].float() == 1).all()) and bool((out[-16:].float() == world).all())
            res.setdefault("graph_replay_ok", {})[str(nbytes)] = ok
            reps = max(2, iters // per)
            g.replay()
            torch.cuda.synchronize()
            dist.barrier()
            med, per_block = timed_blocks(torch, g.replay, max(BLOCKS, reps), per)
            res["graph"][str(nbytes)] = med
            res["graph_blocks"][str(nbytes)] = per_block
            del g
    dist.barrier()
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
        torch.save(keep, args.out + ".pt")
    dist.destroy_process_group()


def ab(args):
    """NCCL (a group made with PENNY_NCCL=off) and penny (the default group)
    alternated in one process: see the module's text."""
    if args.pin:
        rank = int(os.environ["RANK"])
        pin(rank, int(os.environ.get("LOCAL_RANK", rank)),
            int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"])))
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=args.timeout), device_id=dev)
    coll = args.coll
    w = torch.ones(1024, device=dev)
    # every rank alike, before each group's set-up (its first call): the
    # default group penny's and the second NCCL's, or (--swap) the other way
    os.environ["PENNY_NCCL"] = "off" if args.swap or args.control else "on"
    dist.all_reduce(w)
    torch.cuda.synchronize()
    os.environ["PENNY_NCCL"] = "on" if args.swap and not args.control else "off"
    g_two = dist.new_group(list(range(world)))
    dist.all_reduce(w, group=g_two)
    torch.cuda.synchronize()
    del os.environ["PENNY_NCCL"]
    sides = (("penny", g_two), ("nccl", None)) if args.swap else (("penny", None), ("nccl", g_two))
    res = {"coll": coll, "world": world, "rounds": args.rounds, "torch": torch.__version__,
           "nccl": ".".join(str(v) for v in torch.cuda.nccl.version()), "eager": {}, "graph": {}}
    lines = ["# %s, %d ranks, NCCL %s, PyTorch %s: penny (%s) and NCCL (%s) in one process, %d "
             "rounds of one block each, alternated%s"
             % (coll, world, res["nccl"], res["torch"],
                "a second group" if args.swap else "the default group",
                "the default group" if args.swap else "a second group", args.rounds,
                "; CONTROL: NCCL runs the penny side too" if args.control else ""),
             "# mode   bytes       nccl_us   penny_us  ratio   ratio/round min med max"]
    rows = []
    b = args.min_bytes
    while b <= args.max_bytes:
        nbytes, b = b, b * 2
        n = nbytes // 2 if coll == "all_reduce" else nbytes // 2 // world * world
        if n < world:
            continue
        nin = n // world if coll == "all_gather" else n
        bufs = {}
        for name, grp in sides:
            x = torch.randn(nin, device=dev).to(torch.bfloat16)
            bufs[name] = (x, output(coll, world, x), grp)
        iters = max(10, min(args.iters, int(2e9 // max(nbytes, 1) // 8)))
        for name in bufs:
            x, y, grp = bufs[name]
            for _ in range(5):
                collective(dist, coll, x, y, group=grp)
        graphs = {}
        if args.graph:
            for name in bufs:
                x, y, grp = bufs[name]
                # the dict alone holds them (dropped after the size)
                graphs[name] = captured(torch, lambda: collective(dist, coll, x, y, group=grp),
                                        args.graph)
        torch.cuda.synchronize()
        for mode in ("eager", "graph") if graphs else ("eager",):
            per = {"penny": [], "nccl": []}
            for r in range(args.rounds):
                order = sides if r % 2 == 0 else sides[::-1]
                for name, _ in order:
                    x, y, grp = bufs[name]
                    torch.cuda.synchronize()
                    dist.barrier()
                    if mode == "eager":
                        launch, k, calls = (lambda: collective(dist, coll, x, y, group=grp)), iters, 1
                    else:
                        launch, k, calls = graphs[name].replay, max(2, iters // args.graph), args.graph
                    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
                    ev[0].record()
                    for _ in range(k):
                        launch()
                    ev[1].record()
                    ev[1].synchronize()
                    per[name].append(ev[0].elapsed_time(ev[1]) * 1000.0 / (k * calls))
            # the slowest rank's figure per block
            t = torch.tensor(per["penny"] + per["nccl"], device=dev, dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            t = t.tolist()
            pp, nn = t[:args.rounds], t[args.rounds:]
            ratios = sorted(p_ / n_ for p_, n_ in zip(pp, nn))
            pm, nm = statistics.median(pp), statistics.median(nn)
            res[mode][str(nbytes)] = {"penny": pp, "nccl": nn}
            lines.append("%-6s %11d %9.2f %9.2f %6.3f   %6.3f %6.3f %6.3f%s"
                         % (mode, nbytes, nm, pm, pm / nm, ratios[0], statistics.median(ratios),
                            ratios[-1], "  over %.2f" % GOAL if pm / nm > GOAL else ""))
            rows.append("\t".join(str(v) for v in (mode, world, nbytes, args.rounds, round(nm, 3),
                                                    round(pm, 3), round(pm / nm, 4), round(ratios[0], 4),
                                                    round(statistics.median(ratios), 4),
                                                    round(ratios[-1], 4))))
        launch = None  # graphs[name].replay holds its graph
        graphs.clear()
    over = [ln.split()[0] + " " + ln.split()[1] for ln in lines[2:] if "over" in ln]
    lines.append("# sizes with penny's median over %.2fx NCCL's: %s" % (GOAL, ", ".join(over) or "none"))
    dist.barrier()
    if rank == 0:
        report(lines, [], args.out, "mode\tranks\tbytes\trounds\tnccl_us\tpenny_us\tratio"
               "\tratio_min\tratio_med\tratio_max", rows)
        with open(args.out + ".json", "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
    dist.destroy_process_group()


# ---- compare (plain python; torch only for the kept tensors) ----

CALLS = {"all_reduce": "all_reduce", "reduce_scatter": "reduce_scatter_tensor",
         "all_gather": "all_gather_into_tensor"}


def check_results(a, b):
    """NCCL's run a against penny's b, case by case: (identical, different,
    not run by one or both, notes)."""
    same = diff = skipped = 0
    notes = []
    for key in sorted(a["check"]):
        x, y = a["check"][key], b["check"].get(key, {"error": "missing"})
        if "error" in x or "error" in y:
            skipped += 1
            if ("error" in x) != ("error" in y):
                notes.append("%-34s NCCL: %s | penny: %s" % (key, x.get("error", "ok"), y.get("error", "ok")))
            continue
        if x["sha256"] == y["sha256"] and x["ranks_agree"] and y["ranks_agree"]:
            same += 1
            continue
        diff += 1
        notes.append("%-34s differs: ranks agree NCCL %s penny %s; error vs float64 NCCL %s penny %s"
                     % (key, x["ranks_agree"], y["ranks_agree"], x.get("max_abs_err"), y.get("max_abs_err")))
    return same, diff, skipped, notes


def bad_replays(a, b):
    """The sizes whose CUDA graph replay was wrong, penny's then NCCL's."""
    bad = [s for s, ok in b.get("graph_replay_ok", {}).items() if not ok]
    return bad + ["NCCL " + s for s, ok in a.get("graph_replay_ok", {}).items() if not ok]


def report(lines, bad_replay, outbase, header, rows):
    """The report's lines (and the wrong replays) to stdout and OUTBASE.txt,
    the rows under header to OUTBASE.tsv."""
    if bad_replay:
        lines.append("# CUDA graph replays with wrong results: " + ", ".join(bad_replay))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(outbase + ".txt", "w") as f:
        f.write(text)
    with open(outbase + ".tsv", "w") as f:
        f.write(header + "\n" + "\n".join(rows) + "\n")


def compare(args):
    a = json.load(open(args.nccl))
    b = json.load(open(args.penny))
    lines = []
    out = lines.append
    coll = a.get("coll", "all_reduce")
    out("# torch.distributed.%s, %d ranks: NCCL %s (%s) vs penny's interposer (%s), PyTorch %s"
        % (CALLS[coll], a["world"], a["nccl"], a["label"], b["label"], a["torch"]))
    same, diff, skipped, notes = check_results(a, b)
    out("# results: %d identical, %d different, %d not run by one or both (unsupported)" % (same, diff, skipped))
    try:
        import torch
        ka, kb = torch.load(args.nccl + ".pt"), torch.load(args.penny + ".pt")
        for key in sorted(ka):
            if key not in kb or raw_bytes(torch, ka[key]) == raw_bytes(torch, kb[key]):
                continue
            wide = torch.complex128 if ka[key].is_complex() else torch.float64
            d = (ka[key].to(wide) - kb[key].to(wide)).abs()
            notes.append("%-34s %d of %d elements differ, max |diff| %.3g"
                         % (key, int((d != 0).sum()), ka[key].numel(), float(d.max())))
    except Exception as e:  # torch missing here, or no kept tensors
        notes.append("(kept tensors not compared: %s)" % e)
    lines.extend("#   " + n for n in notes)
    rows = []
    for mode in ("eager", "graph"):
        if not a[mode] or not b[mode]:
            continue
        out("")
        out("# bfloat16 %s, %s: us per call, %s; size: the whole buffer"
            % ("sum" if coll != "all_gather" else "all-gather",
               "captured in CUDA graphs" if mode == "graph" else "eager", a.get("timing", "mean of one block")))
        out("%12s %12s %12s %8s" % ("size", "NCCL us", "penny us", "penny/NCCL"))
        worst = 0
        for s in sorted(a[mode], key=int):
            if s not in b[mode]:
                continue
            r = b[mode][s] / a[mode][s]
            worst = max(worst, r)
            ok = b.get("graph_replay_ok", {}).get(s, True) if mode == "graph" else True
            out("%12s %12.2f %12.2f %8.3f%s" % (human(int(s)), a[mode][s], b[mode][s], r,
                                                   "" if ok else "  REPLAY WRONG"))
            rows.append("%s\t%d\t%s\t%.3f\t%.3f\t%.4f\t%s" % (mode, a["world"], s, a[mode][s], b[mode][s], r, coll))
        out("# %s: worst penny/NCCL %.3f (goal: <= %.2f)" % (mode, worst, GOAL))
    bad_replay = bad_replays(a, b)
    report(lines, bad_replay, args.outbase, "mode\tranks\tbytes\tnccl_us\tpenny_us\tratio\tcoll", rows)
    return 1 if diff or bad_replay else 0


# ---- rounds (plain python) ----

def rounds(args):
    """The launches of each side in rounds: per size and mode, each side's
    median over its launches, the ratio of the medians and the per-round
    ratios; exit as compare's (a timing miss is not an error)."""
    if len(args.nccl) != len(args.penny):
        print("torch_allreduce: rounds: %d NCCL files, %d penny files: one of each per round"
              % (len(args.nccl), len(args.penny)), file=sys.stderr)
        return 2
    runs = []
    for name in args.nccl + args.penny:
        try:
            with open(name) as f:
                d = json.load(f)
            lack = [key for key in ("label", "coll", "world", "nccl", "torch", "check", "eager", "graph")
                    if key not in d]
        except (OSError, ValueError, TypeError) as e:
            lack = [str(e)]
        if lack:
            print("torch_allreduce: rounds: %s is not a run's JSON (%s)" % (name, ", ".join(lack)),
                  file=sys.stderr)
            return 2
        runs.append((name, d))
    k = len(args.nccl)
    desc = lambda i: "%s: %s, %s on %d ranks" % (runs[i][0], runs[i][1]["label"], runs[i][1]["coll"],
                                                runs[i][1]["world"])
    for i, (name, d) in enumerate(runs):
        side = 0 if i < k else k  # a side's launches share a label, all launches coll and ranks
        if d["label"] != runs[side][1]["label"]:
            bad = side
        elif (d["coll"], d["world"]) != (runs[0][1]["coll"], runs[0][1]["world"]):
            bad = 0
        else:
            continue
        print("torch_allreduce: rounds: %s; %s" % (desc(i), desc(bad)), file=sys.stderr)
        return 2
    ns, ps = [d for _, d in runs[:k]], [d for _, d in runs[k:]]
    a = ns[0]
    coll = a["coll"]
    lines = []
    out = lines.append
    out("# torch.distributed.%s, %d ranks: NCCL %s (%s) vs penny's interposer (%s), PyTorch %s; "
        "%d rounds, one launch of each side a round"
        % (CALLS[coll], a["world"], a["nccl"], a["label"], ps[0]["label"], a["torch"], k))
    diff = 0
    counts, notes, bad_replay = [], [], []
    for r, (x, y) in enumerate(zip(ns, ps), 1):
        same, nd, skipped, nn = check_results(x, y)
        diff += nd
        counts.append((same, nd, skipped))
        notes += ["round %d: %s" % (r, n) for n in nn]
        bad_replay += ["round %d: %s" % (r, s) for s in bad_replays(x, y)]
    if len(set(counts)) == 1:
        out("# results, every round: %d identical, %d different, %d not run by one or both (unsupported)"
            % counts[0])
    else:
        for r, c in enumerate(counts, 1):
            out("# results, round %d: %d identical, %d different, %d not run by one or both (unsupported)"
                % ((r,) + c))
    lines.extend("#   " + n for n in notes)
    rows = []
    for mode in ("eager", "graph"):
        if not all(d[mode] for d in ns + ps):
            if any(d[mode] for d in ns + ps):
                out("")
                out("# %s: not timed in every launch, not reported" % mode)
            continue
        sizes = sorted(set.intersection(*(set(d[mode]) for d in ns + ps)), key=int)
        out("")
        out("# bfloat16 %s, %s: us per call, a launch's figure the %s; size: the whole buffer;"
            % ("sum" if coll != "all_gather" else "all-gather",
               "captured in CUDA graphs" if mode == "graph" else "eager", a.get("timing", "mean of one block")))
        out("# per side the median over its %d launches and their range, the ratio of the medians,"
            " and round by round penny/NCCL (min median max)" % k)
        out("%10s %9s %17s %9s %17s %8s %7s %7s %7s" % ("size", "NCCL us", "NCCL min-max", "penny us",
                                                        "penny min-max", "med/med", "r.min", "r.med", "r.max"))
        over, always, never, spread, worst = [], 0, 0, 0, (0, "")
        for s in sizes:
            av, bv = [d[mode][s] for d in ns], [d[mode][s] for d in ps]
            ma, mb = statistics.median(av), statistics.median(bv)
            rr = [y / x for x, y in zip(av, bv)]
            ratio = mb / ma
            if ratio > GOAL:
                over.append(human(int(s)))
            worst = max(worst, (ratio, human(int(s))))
            always += min(rr) > GOAL
            never += max(rr) <= GOAL
            spread = max(spread, max(av) / min(av))
            out("%10s %9.2f %17s %9.2f %17s %8.3f %7.3f %7.3f %7.3f"
                % (human(int(s)), ma, "%.2f-%.2f" % (min(av), max(av)), mb, "%.2f-%.2f" % (min(bv), max(bv)),
                   ratio, min(rr), statistics.median(rr), max(rr)))
            rows.append("%s\t%d\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.4f\t%.4f\t%.4f\t%.4f\t%s"
                        % (mode, a["world"], s, k, ma, min(av), max(av), mb, min(bv), max(bv), ratio,
                           min(rr), statistics.median(rr), max(rr), coll))
        out("# %s: worst penny/NCCL of the medians %.3f (%s), over %.2f at %d of %d sizes%s (goal: <= %.2f)"
            % (mode, worst[0], worst[1], GOAL, len(over), len(sizes), (": " + ", ".join(over)) if over else "",
               GOAL))
        out("# %s: sizes over %.2f in every round: %d, in no round: %d (the others: the rounds disagree); "
            "NCCL's launches differ up to %.2fx (slowest/fastest)" % (mode, GOAL, always, never, spread))
    report(lines, bad_replay, args.out, "mode\tranks\tbytes\trounds\tnccl_us\tnccl_min\tnccl_max\tpenny_us"
           "\tpenny_min\tpenny_max\tratio\tround_ratio_min\tround_ratio_med\tround_ratio_max\tcoll", rows)
    return 1 if diff or bad_replay else 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--label", required=True)
    r.add_argument("--coll", default="all_reduce", choices=["all_reduce", "reduce_scatter", "all_gather"])
    r.add_argument("--out", required=True)
    r.add_argument("--timeout", type=int, default=300)
    r.add_argument("--iters", type=int, default=200)
    r.add_argument("--graph", type=int, default=20, help="calls per captured graph (0: none)")
    r.add_argument("--min-bytes", type=int, default=1 << 10)
    r.add_argument("--max-bytes", type=int, default=256 << 20)
    r.add_argument("--blocks", type=int, default=BLOCKS, choices=range(5, 101), metavar="5..100",
                   help="timed blocks per size; the time is their median (eager times move "
                   "by up to 2x between runs on a shared machine: more blocks steady it)")
    r.add_argument("--pin", action="store_true",
                   help="bind each rank to its own CPUs (its GPU's NUMA node's where known) first")
    a = sub.add_parser("ab", help="NCCL and penny alternated in one process (under the interposer)")
    a.add_argument("--coll", default="all_reduce", choices=["all_reduce", "reduce_scatter", "all_gather"])
    a.add_argument("--out", required=True, metavar="OUTBASE")
    a.add_argument("--timeout", type=int, default=300)
    a.add_argument("--iters", type=int, default=200)
    a.add_argument("--graph", type=int, default=20, help="calls per captured graph (0: none)")
    a.add_argument("--rounds", type=int, default=10, choices=range(2, 201), metavar="2..200")
    a.add_argument("--min-bytes", type=int, default=1 << 10)
    a.add_argument("--max-bytes", type=int, default=256 << 20)
    a.add_argument("--pin", action="store_true")
    a.add_argument("--swap", action="store_true",
                   help="NCCL on the default group, penny on the second (the groups' own difference)")
    a.add_argument("--control", action="store_true",
                   help="NCCL on both groups: the ratio the bench reads without penny")
    c = sub.add_parser("compare")
    c.add_argument("nccl")
    c.add_argument("penny")
    c.add_argument("outbase")
    o = sub.add_parser("rounds", help="launches of NCCL and penny alternated: medians over the rounds")
    o.add_argument("--out", required=True, metavar="OUTBASE", help="writes OUTBASE.txt and OUTBASE.tsv")
    o.add_argument("--nccl", required=True, nargs="+", metavar="JSON", help="NCCL's runs, round 1 first")
    o.add_argument("--penny", required=True, nargs="+", metavar="JSON", help="penny's runs, round 1 first")
    args = p.parse_args()
    if args.cmd == "run":
        run(args)
        return 0
    if args.cmd == "ab":
        ab(args)
        return 0
    if args.cmd == "rounds":
        return rounds(args)
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
