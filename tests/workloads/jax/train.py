"""JAX training loop for the XLA checks (issue 33): a three-layer MLP trained with SGD by a
jitted step of known operations, each layer in a `jax.named_scope`, weights and data drawn from
`jax.random` (nothing downloaded).

usage: train.py [--steps N] [--batch B] [--width W] [--hlo FILE] [--ops FILE]

Lines marked `# OP name` are where the checker expects the operation `name` of the compiled
step to point; the line marked `# CALL` calls the jitted step, `# COMPILE` triggers its
compilation (the first call). --hlo writes the optimized HLO of the step; --ops writes one
`LINE NAME` per marked line. Prints `JAX pid=... steps=... loss=... loop_ms=... step_ms=... ok`
when done (loop_ms: the wall time of the steps after the compiling call, which the profiler's
cost is measured by).
"""
import argparse
import os
import re
import time

import jax
import jax.numpy as jnp


def init(key, sizes):
    params = []
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        key, k = jax.random.split(key)
        params.append({"w": jax.random.normal(k, (m, n), jnp.float32) / jnp.sqrt(m), "b": jnp.zeros((n,), jnp.float32)})
    return params


def dense(p, x, name, act):
    with jax.named_scope(name):
        h = jnp.dot(x, p["w"])  # OP dot_general
        h = h + p["b"]  # OP add
        return jax.nn.gelu(h) if act else h  # OP gelu


def model(params, x):
    h = dense(params[0], x, "layer1", True)
    h = dense(params[1], h, "layer2", True)
    return dense(params[2], h, "head", False)


def loss_fn(params, x, y):
    with jax.named_scope("loss"):
        out = model(params, x)
        return jnp.mean((out - y) ** 2)  # OP reduce_sum


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    with jax.named_scope("sgd"):
        params = jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)  # OP sub
    return params, loss


def run(params, x, y, steps):
    loss = None
    for _ in range(steps):
        params, loss = train_step(params, x, y)  # CALL
    return params, loss


def marked_lines():
    ops = []
    with open(__file__) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"#\s+(OP|CALL|COMPILE)(?:\s+(\w+))?\s*$", line)
            if m:
                ops.append(f"{n} {m.group(1)} {m.group(2) or ''}".strip())
    return ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--hlo")
    ap.add_argument("--ops")
    a = ap.parse_args()
    key = jax.random.PRNGKey(0)
    kp, kx, ky = jax.random.split(key, 3)
    params = init(kp, [a.width, a.width, a.width, 512])
    x = jax.random.normal(kx, (a.batch, a.width), jnp.float32)
    y = jax.random.normal(ky, (a.batch, 512), jnp.float32)
    if a.ops:
        with open(a.ops, "w") as f:
            f.write("\n".join(marked_lines()) + "\n")
    params, loss = train_step(params, x, y)  # COMPILE
    jax.block_until_ready(loss)
    t0 = time.perf_counter()
    params, loss = run(params, x, y, a.steps)
    loss = float(jax.block_until_ready(loss))
    loop_ms = (time.perf_counter() - t0) * 1e3
    if a.hlo:  # after the run: the compiled step comes from the cache, compiled no second time
        with open(a.hlo, "w") as f:
            f.write(train_step.lower(params, x, y).compile().as_text())
    print(f"JAX pid={os.getpid()} steps={a.steps} loss={loss:.6f} loop_ms={loop_ms:.1f} "
          f"step_ms={loop_ms / max(a.steps, 1):.3f} jax={jax.__version__} devices={jax.devices()} ok", flush=True)


if __name__ == "__main__":
    main()
