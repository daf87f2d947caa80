"""egglog anchor for bench/egraph: egg's `math` workload (the 23 rewrite rules and 7
start terms of egglog's tests/math-microbenchmark.egg) run step by step on one thread,
printing e-nodes and seconds per step, with egglog's own split of each step into
search + apply, merge and rebuild time.

Needs Python >= 3.12 and `pip install egglog==14.0.0`. Usage:
    python bench/egraph/egglog_math.py [steps (default 12)]
"""
import platform
import sys
import time

import egglog
import egglog.bindings as b

PROGRAM = """
(datatype Math
  (Diff Math Math) (Integral Math Math)
  (Add Math Math) (Sub Math Math) (Mul Math Math) (Div Math Math) (Pow Math Math)
  (Ln Math) (Sqrt Math) (Sin Math) (Cos Math)
  (Const i64) (Var String))
(rewrite (Add a b) (Add b a))
(rewrite (Mul a b) (Mul b a))
(rewrite (Add a (Add b c)) (Add (Add a b) c))
(rewrite (Mul a (Mul b c)) (Mul (Mul a b) c))
(rewrite (Sub a b) (Add a (Mul (Const -1) b)))
(rewrite (Add a (Const 0)) a)
(rewrite (Mul a (Const 0)) (Const 0))
(rewrite (Mul a (Const 1)) a)
(rewrite (Sub a a) (Const 0))
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))
(rewrite (Add (Mul a b) (Mul a c)) (Mul a (Add b c)))
(rewrite (Mul (Pow a b) (Pow a c)) (Pow a (Add b c)))
(rewrite (Pow x (Const 1)) x)
(rewrite (Pow x (Const 2)) (Mul x x))
(rewrite (Diff x (Add a b)) (Add (Diff x a) (Diff x b)))
(rewrite (Diff x (Mul a b)) (Add (Mul a (Diff x b)) (Mul b (Diff x a))))
(rewrite (Diff x (Sin x)) (Cos x))
(rewrite (Diff x (Cos x)) (Mul (Const -1) (Sin x)))
(rewrite (Integral (Const 1) x) x)
(rewrite (Integral (Cos x) x) (Sin x))
(rewrite (Integral (Sin x) x) (Mul (Const -1) (Cos x)))
(rewrite (Integral (Add f g) x) (Add (Integral f x) (Integral g x)))
(rewrite (Integral (Sub f g) x) (Sub (Integral f x) (Integral g x)))
(rewrite (Integral (Mul a b) x)
  (Sub (Mul a (Integral b x)) (Integral (Mul (Diff x a) (Integral b x)) x)))
(Integral (Ln (Var "x")) (Var "x"))
(Integral (Add (Var "x") (Cos (Var "x"))) (Var "x"))
(Integral (Mul (Cos (Var "x")) (Var "x")) (Var "x"))
(Diff (Var "x") (Add (Const 1) (Mul (Const 2) (Var "x"))))
(Diff (Var "x") (Sub (Pow (Var "x") (Const 3)) (Mul (Const 7) (Pow (Var "x") (Const 2)))))
(Add (Mul (Var "y") (Add (Var "x") (Var "y"))) (Sub (Add (Var "x") (Const 2)) (Add (Var "x") (Var "x"))))
(Div (Const 1) (Sub (Div (Add (Const 1) (Sqrt (Var "five"))) (Const 2))
                    (Div (Sub (Const 1) (Sqrt (Var "five"))) (Const 2))))
"""


def size(eg):
    """Total e-nodes: the rows of every constructor, as egglog's print-size counts them."""
    out = eg.run_program(*eg.parse_program("(print-size)"))
    return sum(n for _, n in out[0].sizes)


def secs(d):
    return sum(v.total_seconds() for v in d.values())


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    eg = b.EGraph()
    eg.set_num_threads(1)
    eg.run_program(*eg.parse_program(PROGRAM))
    version = getattr(egglog, "__version__", None)
    if version is None:
        from importlib.metadata import version as v
        version = v("egglog")
    print(f"# egglog {version}, python {platform.python_version()}, {platform.machine()}, "
          f"{platform.processor() or platform.uname().machine}, one thread")
    print("step\tenodes\tseconds\tsearch_apply_s\tmerge_s\trebuild_s")
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        out = eg.run_program(*eg.parse_program("(run 1)"))
        dt = time.perf_counter() - t0
        r = out[0].report
        sa = secs(r.search_and_apply_time_per_ruleset)
        mg = secs(r.merge_time_per_ruleset)
        rb = secs(r.rebuild_time_per_ruleset)
        print(f"{step}\t{size(eg)}\t{dt:.3f}\t{sa:.3f}\t{mg:.3f}\t{rb:.3f}", flush=True)


if __name__ == "__main__":
    main()
