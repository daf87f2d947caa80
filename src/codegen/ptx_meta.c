/* ptx_meta.c — the program's canonical text, recorded in the PTX as comments, so a
 * tool that loads the PTX knows what it computes without a second channel: the fake
 * CUDA driver (tests/fakecuda/exec.c) parses it and runs the reference interpreter at
 * each launch (docs/RUNTIME.md, "Fake driver"). ptxas and the driver's JIT ignore
 * comments, so the compiled code is the same. The block is
 *
 *   // vyre.program <lines>
 *   // <line 1 of the text of the emitted, optimised program>
 *   ...
 *   // vyre.entry <name> <kind>
 *
 * with one `vyre.entry` line per entry, written before it: kind `plain` (the §5
 * parameters, one worklist header w_NAME each after the params), `grid` (the
 * cooperative kernel of ptx_grid.c: then scratch and the virtual grid), `vector`
 * (NAME_v4: then vyre_vn), `worklist` (NAME_wl of ptx_worklist.c, launched sized by a
 * worklist: vyre_wn last), each with ` debug` when vy_oob follows (the last
 * parameter but for NAME_wl's vyre_wn). The text is the optimised copy's (what the
 * PTX computes), so a run on the interpreter also checks the optimiser against the
 * reference. */
#include "ptx.h"

#include <string.h>

void vyre_ptx_meta_program(struct ptx_ctx *c, struct vyre_pbuf *out) {
    char *text = NULL;
    size_t len = 0;
    if (vyre_text_print(c->p, &text, &len) != VYRE_OK) {
        out->oom = true; /* the printer fails only when memory runs out */
        return;
    }
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    if (len && text[len - 1] != '\n') lines++;
    vyre_pbuf_printf(out, "// vyre.program %zu\n", lines);
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        vyre_pbuf_puts(out, "// ");
        vyre_pbuf_put(out, text + i, n);
        vyre_pbuf_puts(out, "\n");
        i += n + 1;
    }
    vyre_free(text);
}

void vyre_ptx_meta_entry(const struct ptx_ctx *c, struct vyre_pbuf *out, const char *name) {
    const char *kind = c->vec                    ? "vector"
                       : c->grid                 ? "grid"
                       : vyre_ptx_wl_is_entry(c) ? "worklist"
                                                 : "plain";
    vyre_pbuf_printf(out, "// vyre.entry %s %s%s\n", name, kind, c->debug ? " debug" : "");
}
