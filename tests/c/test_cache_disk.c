/* test_cache_disk.c — the disk cubin cache against what the field does to it (issue 14,
 * finding 7 and item 6): stale temp files of dead writers, sizes written as 1e9 or 512M,
 * headers that lie about their length, a directory squatting on a key's name, and two
 * processes filling one small cache at once (nothing torn or foreign is ever read). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cuda_int.h"
#include "harness.h"

static char tmpdir[256];

static void use_dir(const char *sub, char *dir, size_t size) {
    snprintf(dir, size, "%s/%s", tmpdir, sub);
    setenv("VYRE_CACHE_DIR", dir, 1);
}

static void test_cap_sizes(void) {
    static const struct {
        const char *text;
        uint64_t bytes;
    } ok[] = {{"12345", 12345},
              {"1e9", 1000000000},
              {"512M", 512u << 20},
              {"2GiB", UINT64_C(2) << 30},
              {"64k", 64u << 10},
              {"1.5K", 1536},
              {"0", 0},
              {"300MB", 300u << 20}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        setenv("VYRE_CACHE_MAX_BYTES", ok[i].text, 1);
        CHECK_EQ_U64(vyre_cuda_cache_cap(), ok[i].bytes);
    }
    static const char *const bad[] = {"abc", "-5", "1e30", "12Q", "inf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("VYRE_CACHE_MAX_BYTES", bad[i], 1);
        CHECK_EQ_U64(vyre_cuda_cache_cap(), UINT64_C(256) << 20); /* + one warning */
    }
    unsetenv("VYRE_CACHE_MAX_BYTES");
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fwrite(data, 1, len, f);
    fclose(f);
}

static void test_lying_header(void) {
    char dir[300], path[400];
    use_dir("lying", dir, sizeof dir);
    unsigned char blob[100];
    memset(blob, 3, sizeof blob);
    uint64_t ev;
    CHECK(vyre_cu_disk_write(7, blob, sizeof blob, &ev));
    snprintf(path, sizeof path, "%s/%016llx.cubin", dir, 7ULL);
    /* rewrite the header's length field (bytes 16..23) to claim 1 GiB */
    int fd = open(path, O_WRONLY);
    uint64_t huge = UINT64_C(1) << 30;
    CHECK(fd >= 0 && pwrite(fd, &huge, sizeof huge, 16) == (ssize_t)sizeof huge);
    if (fd >= 0) close(fd);
    size_t len = 0;
    CHECK(vyre_cu_disk_read(7, &len) == NULL);
    /* a truncated file is a miss as well */
    CHECK(vyre_cu_disk_write(8, blob, sizeof blob, &ev));
    snprintf(path, sizeof path, "%s/%016llx.cubin", dir, 8ULL);
    CHECK(truncate(path, 60) == 0);
    CHECK(vyre_cu_disk_read(8, &len) == NULL);
}

static void test_stale_temp_files(void) {
    char dir[300], stale[400], fresh[400];
    use_dir("stale", dir, sizeof dir);
    unsigned char blob[100];
    memset(blob, 4, sizeof blob);
    uint64_t ev, bytes = 0, files = 0;
    CHECK(vyre_cu_disk_write(1, blob, sizeof blob, &ev)); /* makes the directory */
    snprintf(stale, sizeof stale, "%s/.tmp-0000000000000009-99999-0", dir);
    snprintf(fresh, sizeof fresh, "%s/.tmp-000000000000000a-99999-1", dir);
    write_file(stale, blob, sizeof blob);
    write_file(fresh, blob, sizeof blob);
    struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
    CHECK(utimensat(AT_FDCWD, stale, old, 0) == 0);
    vyre_cuda_cache_usage(&bytes, &files);
    /* the stale one is gone; the fresh one (a writer at work) counts toward the cap */
    CHECK(access(stale, F_OK) != 0);
    CHECK(access(fresh, F_OK) == 0);
    CHECK_EQ_U64(files, 2);
    CHECK_EQ_U64(bytes, 132 + 100);
}

static void test_directory_on_key(void) {
    char dir[300], path[400];
    use_dir("squat", dir, sizeof dir);
    unsigned char blob[64];
    memset(blob, 9, sizeof blob);
    uint64_t ev;
    CHECK(vyre_cu_disk_write(1, blob, sizeof blob, &ev));
    snprintf(path, sizeof path, "%s/%016llx.cubin", dir, 5ULL);
    CHECK(mkdir(path, 0755) == 0);
    size_t len = 0;
    CHECK(vyre_cu_disk_read(5, &len) == NULL);
    CHECK(vyre_cu_disk_write(5, blob, sizeof blob, &ev));
    void *back = vyre_cu_disk_read(5, &len);
    CHECK(back != NULL && len == sizeof blob);
    free(back);
}

/* Two processes write 150 keys each (payload derived from the key) into a cache capped
 * at about 40 entries while reading back at random: every hit has the right bytes. */
static int hammer(unsigned seed) {
    unsigned char blob[900];
    int bad = 0;
    for (unsigned i = 0; i < 150; i++) {
        uint64_t key = 1000 + (i * 7 + seed) % 200, ev;
        for (size_t b = 0; b < sizeof blob; b++) blob[b] = (unsigned char)(key * 31 + b);
        vyre_cu_disk_write(key, blob, sizeof blob, &ev);
        uint64_t probe = 1000 + (i * 13 + seed * 5) % 200;
        size_t len = 0;
        unsigned char *got = vyre_cu_disk_read(probe, &len);
        if (got) {
            for (size_t b = 0; b < len; b++)
                if (len != sizeof blob || got[b] != (unsigned char)(probe * 31 + b)) bad = 1;
            free(got);
        }
    }
    return bad;
}

static void test_two_processes(void) {
    char dir[300];
    use_dir("shared", dir, sizeof dir);
    setenv("VYRE_CACHE_MAX_BYTES", "37000", 1);
    pid_t kids[2];
    for (unsigned k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) _exit(hammer(k + 1));
    }
    for (unsigned k = 0; k < 2; k++) {
        int status = 0;
        CHECK(waitpid(kids[k], &status, 0) == kids[k]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    uint64_t bytes = 0, files = 0;
    vyre_cuda_cache_usage(&bytes, &files);
    CHECK(bytes <= 37000 + 2 * 932); /* each writer may be one file over, briefly */
    CHECK(files > 0);
    unsetenv("VYRE_CACHE_MAX_BYTES");
}

/* A read-only directory, and a file where the directory should be: misses, no error
 * (and one warning on stderr). Skipped as root, which may write anywhere. */
static void test_unwritable_dirs(void) {
    char dir[300];
    unsigned char blob[16] = {1};
    uint64_t ev;
    size_t len;
    use_dir("file-in-the-way", dir, sizeof dir);
    write_file(dir, blob, sizeof blob);
    CHECK(!vyre_cu_disk_write(3, blob, sizeof blob, &ev));
    CHECK(vyre_cu_disk_read(3, &len) == NULL);
    if (geteuid() == 0) return;
    use_dir("readonly", dir, sizeof dir);
    CHECK(mkdir(dir, 0555) == 0);
    CHECK(!vyre_cu_disk_write(3, blob, sizeof blob, &ev));
    CHECK(vyre_cu_disk_read(3, &len) == NULL);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vyre-test-cache-%ld", (long)getpid());
    mkdir(tmpdir, 0700);
    RUN_TEST(test_cap_sizes);
    RUN_TEST(test_lying_header);
    RUN_TEST(test_stale_temp_files);
    RUN_TEST(test_directory_on_key);
    RUN_TEST(test_two_processes);
    RUN_TEST(test_unwritable_dirs);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", tmpdir, tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return harness_finish();
}
