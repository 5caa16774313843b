# SPDX-License-Identifier: MIT
"""torch.distributed.all_reduce, reduce_scatter_tensor and
all_gather_into_tensor as a framework calls them, for
tests/bench/torch-allreduce.sh (one process per GPU under torchrun).

  torchrun --nproc-per-node N torch_allreduce.py run --label L --out FILE.json
           [--coll all_reduce|reduce_scatter|all_gather]
      every dtype PyTorch offers x sum, min, max, avg (and product; the
      all-gather: no op) at odd and even counts (of each rank's block for
      the reduce-scatter and all-gather): the results' SHA-256 per rank,
      rank 0's small results themselves, and the largest error against a
      float64 reference; then bfloat16 sum from 1 KiB to 256 MiB (the whole
      buffer: nccl-tests' size), eager and captured in a CUDA graph,
      microseconds per call (the median of BLOCKS timed blocks; every
      block's figure kept).
  python3 torch_allreduce.py compare NCCL.json PENNY.json OUTBASE
      results identical or not per case, the timings side by side and the
      penny/NCCL ratio per size; writes OUTBASE.txt and OUTBASE.tsv.
"""
import argparse
import datetime
import hashlib
import json
import os
import sys
import time


# Each size is timed as BLOCKS blocks of calls back to back on the stream,
# an event between blocks (no host synchronisation inside): the median
# block's microseconds per call are reported, so that one stall of a few
# milliseconds (seen on these machines for NCCL and penny alike, at random
# sizes) moves one block, not the figure.  Every block's figure is kept.
BLOCKS = 5


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


def collective(dist, coll, x, y, op=None):
    """The call from input x into y (output()); y."""
    kw = {} if op is None else {"op": op}
    if coll == "all_reduce":
        dist.all_reduce(x, **kw)
    elif coll == "reduce_scatter":
        dist.reduce_scatter_tensor(y, x, **kw)
    else:
        dist.all_gather_into_tensor(y, x)
    return y


def run(args):
    import torch
    import torch.distributed as dist

    global BLOCKS
    BLOCKS = args.blocks

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
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
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):  # warm-up on a side stream, as PyTorch asks
                for _ in range(3):
                    collective(dist, coll, x, out)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(per):
                    collective(dist, coll, x, out)
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


# ---- compare (plain python; torch only for the kept tensors) ----

def compare(args):
    a = json.load(open(args.nccl))
    b = json.load(open(args.penny))
    lines = []
    out = lines.append
    coll = a.get("coll", "all_reduce")
    call = {"all_reduce": "all_reduce", "reduce_scatter": "reduce_scatter_tensor",
            "all_gather": "all_gather_into_tensor"}[coll]
    out("# torch.distributed.%s, %d ranks: NCCL %s (%s) vs penny's interposer (%s), PyTorch %s"
        % (call, a["world"], a["nccl"], a["label"], b["label"], a["torch"]))
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
        out("# %s: worst penny/NCCL %.3f (goal: <= 1.03)" % (mode, worst))
    bad_replay = [s for s, ok in b.get("graph_replay_ok", {}).items() if not ok]
    bad_replay += ["NCCL " + s for s, ok in a.get("graph_replay_ok", {}).items() if not ok]
    if bad_replay:
        out("# CUDA graph replays with wrong results: " + ", ".join(bad_replay))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(args.outbase + ".txt", "w") as f:
        f.write(text)
    with open(args.outbase + ".tsv", "w") as f:
        f.write("mode\tranks\tbytes\tnccl_us\tpenny_us\tratio\tcoll\n" + "\n".join(rows) + "\n")
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
    c = sub.add_parser("compare")
    c.add_argument("nccl")
    c.add_argument("penny")
    c.add_argument("outbase")
    args = p.parse_args()
    if args.cmd == "run":
        run(args)
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
