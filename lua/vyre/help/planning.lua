-- vyre.help.planning — help text of the planning modules: vyre.policy, vyre.profiles,
-- vyre.plan_view and the planners vyre.planners.{occupancy, capability, convergence,
-- topology, speedup_gate, waves} (the other planners are in vyre/help/api.lua). Same
-- keys and form as api.lua; rules, inputs and errors in full: docs/PLANNERS.md.
return {
  ["vyre.policy"] = [=[
require("vyre.policy") -> the policy module (also vyre.policy)
The choices the runtime asks Lua for: policy.megakernel(facts) picks how be:megakernel
and be:plan run their steps (cooperative, graph or split). Replace the function to
change the choice; decide still refuses a cooperative grid that could hang. §2.
policy.expansion(stats) picks a worklist round's expansion layout (docs/GRID.md).]=],
  ["vyre.policy.megakernel"] = [=[
vyre.policy.megakernel(facts) -> {mode = "cooperative" | "graph" | "split", reason}
The current megakernel policy (default_megakernel until you assign your own function);
the runtime calls it through policy.decide, which fills costs and checks the answer.]=],
  ["vyre.policy.default_megakernel"] = [=[
vyre.policy.default_megakernel(facts) -> {mode, reason, costs}
The default rule: never cooperative without cooperative launch or a co-resident block
(a grid barrier would hang); else the cheapest mode by policy.costs, ties to
cooperative then graph. facts.force picks a mode (forcing an impossible cooperative
raises).]=],
  ["vyre.policy.decide"] = [=[
vyre.policy.decide(facts [, profile]) -> {mode, reason, ...}
The runtime's entry point: checks the facts, fills missing costs from the profile, calls
the current policy.megakernel and checks its answer (a bad mode, or cooperative where
it cannot run, raises "vyre.policy.decide: ..."; a missing reason is filled in).]=],
  ["vyre.policy.check_facts"] = [=[
vyre.policy.check_facts(facts [, fname]) -> facts
Checks a facts table ({steps, layers, cooperative, fits} required; sms, blocks_per_sm,
rounds, costs, bytes_per_round, occupancy in [0, 1], force optional) and raises naming
the first bad field.]=],
  ["vyre.policy.complete"] = [=[
vyre.policy.complete(facts [, profile]) -> facts
Fills every missing cost (launch_ns, graph_node_ns, graph_launch_ns, readback_ns,
barrier_ns), memory_bandwidth and sms from profile (default facts.profile, else the h100
profile). Changes facts in place.]=],
  ["vyre.policy.costs"] = [=[
vyre.policy.costs(facts) -> {cooperative =, graph =, split =}, rounds
The cost model: estimated nanoseconds of the whole execution in each mode (launches,
graph nodes, barriers, flag readbacks, memory traffic), and the rounds it assumed.
Needs completed facts (policy.complete).]=],
  ["vyre.policy.expansion"] = [=[
vyre.policy.expansion(stats) -> {layout = "item" | "subgroup" | "edges", reason}
The current expansion policy (default_expansion until you assign your own): how a
worklist round walks the CSR rows of its items — an invocation per item, a subgroup
per item of degree >= 32, or edge-balanced chunks of the round's entries (degrees
scanned on the device). Called through policy.choose_expansion. docs/GRID.md.]=],
  ["vyre.policy.default_expansion"] = [=[
vyre.policy.default_expansion(stats) -> {layout, reason}
The default rule over degree statistics {items, edges, max_degree, heavy_edges [,
subgroup = 32, workgroup = 256]}: skewed when rows of degree >= 32 hold at least a
quarter of the entries and the largest row is >= 128 long; then "edges" if the largest
row is also >= workgroup x the mean degree (a hub: R-MAT at scale >= 14), else
"subgroup"; not skewed: an invocation per item ("item"). Bad statistics raise
"vyre.policy.expansion: ... Fix: ...".]=],
  ["vyre.policy.degree_stats"] = [=[
vyre.policy.degree_stats(rowptr [, subgroup]) -> {items, edges, max_degree, heavy_edges,
  heavy_items, subgroup}
The degree statistics policy.expansion reads, over a CSR graph's row starts (a 1-based
table, an Array, or a u32 Buffer, which is downloaded); heavy = degree >= subgroup (32).
Row starts that fall raise "vyre.policy.degree_stats: ... Fix: ...".]=],
  ["vyre.policy.choose_expansion"] = [=[
vyre.policy.choose_expansion(stats) -> {layout, reason}
Calls the current policy.expansion (a user's, through the callback guard) and checks the
answer: a layout other than "item", "subgroup" or "edges" raises with a Fix; a missing reason is
filled in. lib.steps.expand asks it when given no layout.]=],

  ["vyre.profiles"] = [=[
require("vyre.profiles") -> the device profile module (also vyre.profiles)
Device profiles: the capabilities every planner reads (SMs, threads, registers, shared
memory, warp size, cooperative launch, L2, memory, bandwidth) and the costs the
megakernel policy weighs. Synthetic ones run offline; be:profile() gives a real one.]=],
  ["vyre.profiles.get"] = [=[
vyre.profiles.get(name) -> profile
A new copy of a named profile ("h100", "h200", "a100", "rtx5090", ..., "reference";
case-insensitive); callers may change it. Same as vyre.cuda.profile. An unknown name
raises, listing the known ones.]=],
  ["vyre.profiles.names"] = [=[
vyre.profiles.names() -> {"a100", "h100", ...}
The profile names that profiles.get knows, sorted.]=],
  ["vyre.profiles.of"] = [=[
vyre.profiles.of(be) -> profile
The profile of a backend (what be:profile() returns): from the driver's attributes on
CUDA; the reference interpreter as one SM with the host's memory otherwise.]=],
  ["vyre.profiles.check"] = [=[
vyre.profiles.check(p [, fname]) -> p
Checks that p has every profile field (profiles.FIELDS) with its Lua type; raises
naming the first missing or mistyped one.]=],

  ["vyre.plan_view"] = [=[
require("vyre.plan_view") -> the plan view module (also vyre.plan_view)
How a megakernel plan (the table be:plan returns) shows itself: plan:dot() is Graphviz
text (a node per step, a cluster per layer, a labelled edge per barrier) and
tostring(plan) a readable summary. §4.]=],
  ["Plan"] = [=[
vyre.Plan — a megakernel plan: the table be:plan(steps, opts) returns
Fields: mode, reason, grid, layers, barriers, facts, text, ... (docs/PLANNERS.md §4).
Steps of lib.steps.expand add plan.steps[i] = {name, expansion = {layout, reason}} and
plan.expansion = {layout, reason, steps, layouts}.
tostring(plan) is a summary (on the reference: what the CPU does, with no GPU grid).]=],
  ["Plan:dot"] = [=[
plan:dot() -> Graphviz text
A node per step, a cluster per layer, an edge per barrier labelled with its dependency
kind and buffer; the mode and reason as the label. Raises on a malformed plan.]=],
  ["vyre.plan_view.attach"] = [=[
vyre.plan_view.attach(plan) -> plan
vyre.plan_view.attach(plan, steps) -> plan
Gives a plan table (be:plan's, or one made by hand) plan:dot() and __tostring; the
steps' expansion fields (lib.steps.expand) go into plan.steps[i].expansion and
plan.expansion (be:plan passes its steps). A non-table raises; plan:dot() raises on a
malformed plan.]=],

  ["vyre.planners.occupancy.calc"] = [=[
occupancy.calc(profile, {workgroup = 256, registers = 32, shared_bytes = 0})
  -> {workgroup, blocks_per_sm, warps_per_sm, occupancy_bps, occupancy, limiter, zero, reason}
Theoretical occupancy of a kernel shape on a device profile and the limit that sets it;
an impossible shape gives occupancy 0 with `zero` naming the limit. §3.1.]=],
  ["vyre.planners.occupancy.pick"] = [=[
occupancy.pick(profile, {registers =, shared_bytes =, candidates = {...}}) -> best | nil, why
calc for the workgroup size (candidates, default every multiple of the warp size up to
the device maximum) with the highest occupancy, ties to the smaller one.]=],
  ["vyre.planners.occupancy.grid"] = [=[
occupancy.grid(profile, {workgroup, registers, shared_bytes}, {sizing = "cooperative" |
               "bounded", virtual_workgroups, blocks_per_sm}) -> {blocks, blocks_per_sm, ...}
The grid the CUDA runtime launches: cooperative min(virtual, blocks/SM x SMs); bounded
({n = wl}) blocks/SM x SMs. blocks_per_sm: the driver's (k:occupancy()), else calc's.]=],
  ["vyre.planners.occupancy.concurrency"] = [=[
occupancy.concurrency(profile, {kernel, ...}) -> {verdict, cause, reason}
"concurrent" when the device runs kernels concurrently, each can run and one block of
each fits on one SM together; else "serialize" with the first cause
(device_unsupported, kernel_unrunnable, warp_residency, register_pressure, shared_memory).]=],
  ["vyre.planners.capability.check"] = [=[
capability.check(profile, {kernel, min_sm = "8.0", threads_per_block | block, shared_bytes,
                 kernel_max_threads, cooperative, blocks_per_sm, tensor_cores})
  -> {kernel, status, failures, line, message}
Can this kernel run on this device: status "ok" or "blocked" with every unmet
requirement in a fixed order, each with what was asked, what the device has, reason and
fix; `message` is what the CUDA runtime raises when it refuses the kernel. §3.2.]=],
  ["vyre.planners.capability.line"] = [=[
capability.line(verdict) -> "cuda-kernel-capability-v1|kernel=<k>|status=ok" | "...|fix=..."
The one-line verdict (the original's stable format) for logs and CI.]=],
  ["vyre.planners.capability.requirements"] = [=[
capability.requirements(program [, {cooperative =, tensor_cores =, min_sm =}]) -> requirements
The requirements of a vyre Program for capability.check: its name, workgroup as the
block, its shared bytes, sm 7.0 (the lowest PTX target) unless min_sm says more.]=],
  ["vyre.planners.convergence.plan"] = [=[
convergence.plan({max_device_iterations = N, changed_flag_bytes = 4, host_polls = 0
                  [, rounds_expected = R]}) -> plan
The on-device convergence plan: iterate until the changed flag stays zero (or N rounds)
with one host sync and one final flag readback; avoided syncs and bytes. Raises for a
bad N, a flag other than one 4-byte word, or host polls. §3.3.]=],
  ["vyre.planners.convergence.of"] = [=[
convergence.of({flag = buf, max = N}) -> plan
The plan of be:megakernel's opts.converge; the flag is a u32 or i32 buffer of at least
one element (its first word is the flag).]=],
  ["vyre.planners.topology.choose"] = [=[
topology.choose(input) -> {topology, rule, measures, reason}
The frontier topology scheduler: the first rule that holds over memory pressure, degree,
density, launch pressure, fusion and readback picks "warp-sparse", "sparse",
"block-dense", "dense", "hybrid" or "fused-wave". Bad measures raise. §3.4.]=],
  ["vyre.planners.topology.choose_hysteresis"] = [=[
topology.choose_hysteresis(input, previous) -> {topology, rule, measures, reason, kept}
As choose, but previous stays unless another topology's rule holds by the margins
(topology.MARGINS); previous = nil is choose.]=],
  ["vyre.planners.topology.memory_plan"] = [=[
topology.memory_plan({nodes, edges, bytes_per_node, bytes_per_edge, frontier_bytes,
                      scratch_bytes, output_bytes, budget_bytes})
  -> {graph_bytes, required_bytes, budget_bytes, memory_bps, fits}
The frontier memory plan: graph + frontier + scratch + output against the budget.
Raises for a zero budget, negative sizes or sizes past 2^53 bytes.]=],
  ["vyre.planners.speedup_gate.evaluate"] = [=[
speedup_gate.evaluate(samples [, {factor = 5, min_samples = 2, min_memory_bytes, min_cc,
                      min_nodes, min_edges, min_repetitions, backend}]) -> verdict
Is the resident megakernel faster than the host loop by factor on evidence that counts:
{pass, factor, ratios, min_ratio, ratio, failures (every reason, one string each), csv}.
§3.5.]=],
  ["vyre.planners.speedup_gate.csv"] = [=[
speedup_gate.csv(samples) -> CSV text
The evidence: the original's header (speedup_gate.HEADER), one row per sample.]=],
  ["vyre.planners.waves.plan"] = [=[
waves.plan({waves = {id, ...} | n, edges = {{before, after}, ...}})
  -> {groups = {{id, ...}, ...}, barriers = #groups - 1}
The barrier planner: Kahn layering of a wave DAG, one global barrier between groups;
waves given as {id, frontier_bytes, ...} tables also get bytes per group and the peak.
Raises on an unknown or repeated wave, a self edge or a cycle. §3.6.]=],
}
