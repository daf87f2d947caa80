/* replay.c — runs fuzz_pipeline.c's LLVMFuzzerTestOneInput over files, or every file of
 * directories, named on the command line: the seed corpus in ctest (plain and under
 * ASan + UBSan) and crash reproduction without libFuzzer. Prints the count run. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long replayed;

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "vyre_fuzz_replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 1u << 16, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *bigger = realloc(buf, cap * 2);
            if (!bigger) break;
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) return 1;
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    replayed++;
    return 0;
}

static int replay_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "vyre_fuzz_replay: no such file or directory: %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) return replay_file(path);
    DIR *d = opendir(path);
    if (!d) return 1;
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        bad |= replay_path(sub);
    }
    closedir(d);
    return bad;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: vyre_fuzz_replay FILE_OR_DIR...\n");
        return 2;
    }
    int bad = 0;
    for (int i = 1; i < argc; i++) bad |= replay_path(argv[i]);
    printf("vyre_fuzz_replay: %lu inputs through parse, round trip, validate, PTX and the "
           "interpreter\n",
           replayed);
    return bad || replayed == 0;
}
