/* subgroup.c — the facts about subgroup (warp) operations that more than one stage
 * needs: their text-format names, how many operands each takes, which of them
 * exchange values between lanes (and so need uniform control flow), and which
 * combining ops subgroup_reduce/subgroup_scan take on which types. What the ops
 * compute is docs/SUBGROUPS.md; the interpreter (interp_subgroup.c) is its
 * executable form and the PTX (ptx_subgroup.c) matches it bit for bit. */
#include <string.h>

#include "ir.h"

static const struct {
    const char *name;
    unsigned char arity;
} sg_rows[VYRE_SG_COUNT] = {
    [VYRE_SG_SIZE] = {"subgroup_size", 0},
    [VYRE_SG_LANE] = {"subgroup_lane", 0},
    [VYRE_SG_BALLOT] = {"ballot", 1},
    [VYRE_SG_ALL] = {"subgroup_all", 1},
    [VYRE_SG_ANY] = {"subgroup_any", 1},
    [VYRE_SG_SHUFFLE] = {"shuffle", 2},
    [VYRE_SG_SHUFFLE_XOR] = {"shuffle_xor", 2},
    [VYRE_SG_SHUFFLE_UP] = {"shuffle_up", 2},
    [VYRE_SG_SHUFFLE_DOWN] = {"shuffle_down", 2},
    [VYRE_SG_REDUCE] = {"subgroup_reduce", 1},
    [VYRE_SG_SCAN] = {"subgroup_scan", 1},
    [VYRE_SG_MATCH_ANY] = {"match_any", 1},
};

const char *vyre_subgroup_name(enum vyre_subgroup k) {
    return (unsigned)k < VYRE_SG_COUNT ? sg_rows[k].name : "?";
}

bool vyre_subgroup_from_name(const char *name, enum vyre_subgroup *out) {
    for (unsigned i = 0; i < VYRE_SG_COUNT; i++) {
        if (strcmp(name, sg_rows[i].name) == 0) {
            *out = (enum vyre_subgroup)i;
            return true;
        }
    }
    return false;
}

unsigned vyre_subgroup_arity(enum vyre_subgroup k) {
    return (unsigned)k < VYRE_SG_COUNT ? sg_rows[k].arity : 0u;
}

bool vyre_subgroup_communicates(enum vyre_subgroup k) {
    return (unsigned)k < VYRE_SG_COUNT && k != VYRE_SG_SIZE && k != VYRE_SG_LANE;
}

bool vyre_subgroup_is_combiner(enum vyre_op op) {
    switch (op) {
    case VYRE_OP_ADD:
    case VYRE_OP_MIN:
    case VYRE_OP_MAX:
    case VYRE_OP_AND:
    case VYRE_OP_OR:
    case VYRE_OP_XOR: return true;
    default: return false;
    }
}

/* add/min/max over every numeric type; the bitwise ops over integers only (a bool
 * reduction is subgroup_all/subgroup_any, a float has no bitwise meaning). */
bool vyre_subgroup_op_admits(enum vyre_op op, enum vyre_type t) {
    if (!vyre_subgroup_is_combiner(op)) return false;
    if (op == VYRE_OP_AND || op == VYRE_OP_OR || op == VYRE_OP_XOR) return vyre_type_is_int(t);
    return vyre_type_is_int(t) || vyre_type_is_float(t);
}
