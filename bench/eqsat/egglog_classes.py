"""egglog e-classes per step of the math workload: serialize the e-graph after each
(run 1) and count the e-classes and e-nodes of sort Math (primitive i64/String value
nodes left out)."""
import json, sys, time
sys.path.insert(0, "bench/egraph")
import egglog_math as em
import egglog.bindings as b
eg = b.EGraph()
eg.set_num_threads(1)
eg.run_program(*eg.parse_program(em.PROGRAM))
print("step\tenodes\teclasses")
for step in range(1, int(sys.argv[1]) + 1):
    eg.run_program(*eg.parse_program("(run 1)"))
    j = json.loads(eg.serialize([], max_functions=None, max_calls_per_function=None).to_json())
    ns = [n for n in j["nodes"].values() if n["eclass"].startswith("Math-")]
    print(f"{step}\t{len(ns)}\t{len({n['eclass'] for n in ns})}", flush=True)
