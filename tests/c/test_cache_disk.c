/* test_cache_disk.c — the disk cubin cache against what the field does to it (a shared
 * directory outlives processes and versions): stale temp files of dead writers, sizes
 * written as 1e9 or 512M, headers that lie about their length, a directory squatting on
 * a key's name, and two processes filling one small cache at once (nothing torn or
 * foreign is ever read). The cache as a way in (what it holds is loaded as code): an
 * entry copied under another key, a FIFO or a symlink at an entry's name, and
 * directories others can write or another user owns. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cuda_int.h"
#include "harness.h"

static char tmpdir[256];

/* The PTX hash an entry of key k is built from, in these tests. */
#define SRC(k) ((uint64_t)(k) ^ UINT64_C(0x5eed0000))

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
    CHECK(vyre_cu_disk_write(7, SRC(7), blob, sizeof blob, &ev));
    snprintf(path, sizeof path, "%s/%016llx.cubin", dir, 7ULL);
    /* rewrite the header's length field (bytes 16..23) to claim 1 GiB */
    int fd = open(path, O_WRONLY);
    uint64_t huge = UINT64_C(1) << 30;
    CHECK(fd >= 0 && pwrite(fd, &huge, sizeof huge, 16) == (ssize_t)sizeof huge);
    if (fd >= 0) close(fd);
    size_t len = 0;
    CHECK(vyre_cu_disk_read(7, SRC(7), &len) == NULL);
    /* a truncated file is a miss as well */
    CHECK(vyre_cu_disk_write(8, SRC(8), blob, sizeof blob, &ev));
    snprintf(path, sizeof path, "%s/%016llx.cubin", dir, 8ULL);
    CHECK(truncate(path, 60) == 0);
    CHECK(vyre_cu_disk_read(8, SRC(8), &len) == NULL);
}

static void test_stale_temp_files(void) {
    char dir[300], stale[400], fresh[400];
    use_dir("stale", dir, sizeof dir);
    unsigned char blob[100];
    memset(blob, 4, sizeof blob);
    uint64_t ev, bytes = 0, files = 0;
    CHECK(vyre_cu_disk_write(1, SRC(1), blob, sizeof blob, &ev)); /* makes the directory */
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
    CHECK_EQ_U64(bytes, 140 + 100);
}

static void test_directory_on_key(void) {
    char dir[300], path[400];
    use_dir("squat", dir, sizeof dir);
    unsigned char blob[64];
    memset(blob, 9, sizeof blob);
    uint64_t ev;
    CHECK(vyre_cu_disk_write(1, SRC(1), blob, sizeof blob, &ev));
    snprintf(path, sizeof path, "%s/%016llx.cubin", dir, 5ULL);
    CHECK(mkdir(path, 0755) == 0);
    size_t len = 0;
    CHECK(vyre_cu_disk_read(5, SRC(5), &len) == NULL);
    CHECK(vyre_cu_disk_write(5, SRC(5), blob, sizeof blob, &ev));
    void *back = vyre_cu_disk_read(5, SRC(5), &len);
    CHECK(back != NULL && len == sizeof blob);
    free(back);
}

static void entry_path(const char *dir, uint64_t key, char *out, size_t size) {
    snprintf(out, size, "%s/%016llx.cubin", dir, (unsigned long long)key);
}

/* Program B's entry copied under program A's key, its header's key patched to A's:
 * the header still names B's PTX, so loading A misses (and recompiles A). */
static void test_swapped_entry(void) {
    char dir[300], a_path[400], b_path[400];
    use_dir("swap", dir, sizeof dir);
    unsigned char a[80], b[80];
    memset(a, 0xA, sizeof a);
    memset(b, 0xB, sizeof b);
    uint64_t ev;
    size_t len = 0;
    CHECK(vyre_cu_disk_write(21, SRC(21), a, sizeof a, &ev));
    CHECK(vyre_cu_disk_write(22, SRC(22), b, sizeof b, &ev));
    entry_path(dir, 21, a_path, sizeof a_path);
    entry_path(dir, 22, b_path, sizeof b_path);
    FILE *f = fopen(b_path, "rb");
    unsigned char whole[200];
    size_t n = f ? fread(whole, 1, sizeof whole, f) : 0;
    if (f) fclose(f);
    CHECK(n == 40 + sizeof b);
    uint64_t key_a = 21;
    memcpy(whole + 8, &key_a, sizeof key_a); /* the header's key field */
    write_file(a_path, whole, n);
    CHECK(vyre_cu_disk_read(21, SRC(21), &len) == NULL);
    /* B itself still loads, and only for B's PTX */
    unsigned char *got = vyre_cu_disk_read(22, SRC(22), &len);
    CHECK(got != NULL && len == sizeof b && got[0] == 0xB);
    free(got);
    CHECK(vyre_cu_disk_read(22, SRC(21), &len) == NULL);
    /* the recompile overwrites the forged entry with A's own */
    CHECK(vyre_cu_disk_write(21, SRC(21), a, sizeof a, &ev));
    got = vyre_cu_disk_read(21, SRC(21), &len);
    CHECK(got != NULL && len == sizeof a && got[0] == 0xA);
    free(got);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_cache_disk: a read blocked on a FIFO\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    _exit(2);
}

/* A FIFO at an entry's name: the read is a miss at once (an alarm fails the test if
 * it blocks: a blocked read uses no CPU, so this guard is wall-clock, set far past
 * what one open and read take on a loaded machine), and the next write replaces it. */
static void test_fifo_entry(void) {
    char dir[300], path[400];
    use_dir("fifo", dir, sizeof dir);
    unsigned char blob[64];
    memset(blob, 5, sizeof blob);
    uint64_t ev;
    size_t len = 0;
    CHECK(vyre_cu_disk_write(1, SRC(1), blob, sizeof blob, &ev)); /* makes the directory */
    entry_path(dir, 31, path, sizeof path);
    CHECK(mkfifo(path, 0600) == 0);
    signal(SIGALRM, on_alarm);
    alarm(120);
    CHECK(vyre_cu_disk_read(31, SRC(31), &len) == NULL);
    alarm(0);
    uint64_t bytes = 0, files = 0;
    vyre_cuda_cache_usage(&bytes, &files); /* the FIFO is not listed */
    CHECK_EQ_U64(files, 1);
    CHECK(vyre_cu_disk_write(31, SRC(31), blob, sizeof blob, &ev));
    void *got = vyre_cu_disk_read(31, SRC(31), &len);
    CHECK(got != NULL && len == sizeof blob);
    free(got);
}

/* A symlink at an entry's name, to a valid entry elsewhere: not followed, a miss. */
static void test_symlink_entry(void) {
    char dir[300], other[300], path[400], target[400];
    use_dir("elsewhere", other, sizeof other);
    unsigned char blob[64];
    memset(blob, 6, sizeof blob);
    uint64_t ev;
    size_t len = 0;
    CHECK(vyre_cu_disk_write(41, SRC(41), blob, sizeof blob, &ev));
    entry_path(other, 41, target, sizeof target);
    use_dir("links", dir, sizeof dir);
    CHECK(vyre_cu_disk_write(1, SRC(1), blob, sizeof blob, &ev)); /* makes the directory */
    entry_path(dir, 41, path, sizeof path);
    CHECK(symlink(target, path) == 0);
    CHECK(vyre_cu_disk_read(41, SRC(41), &len) == NULL);
    uint64_t bytes = 0, files = 0;
    vyre_cuda_cache_usage(&bytes, &files); /* the link is not listed either */
    CHECK_EQ_U64(files, 1);
}

/* The cache directory is created 0700, and one that group or others can write, or that
 * another user owns, is refused: no reads, no writes, and a reason with a Fix. */
static void test_directory_trust(void) {
    char dir[300], why[1024];
    unsigned char blob[32];
    memset(blob, 7, sizeof blob);
    uint64_t ev;
    size_t len = 0;
    use_dir("made/deeper", dir, sizeof dir);
    CHECK(vyre_cu_disk_write(51, SRC(51), blob, sizeof blob, &ev));
    struct stat sb;
    CHECK(stat(dir, &sb) == 0 && (sb.st_mode & 0777) == 0700);
    CHECK(!vyre_cuda_cache_refused(why, sizeof why));
    CHECK(why[0] == '\0');
    void *got = vyre_cu_disk_read(51, SRC(51), &len);
    CHECK(got != NULL);
    free(got);
    CHECK(chmod(dir, 0770) == 0); /* group-writable */
    CHECK(vyre_cu_disk_read(51, SRC(51), &len) == NULL);
    CHECK(!vyre_cu_disk_write(52, SRC(52), blob, sizeof blob, &ev));
    CHECK(vyre_cuda_cache_refused(why, sizeof why));
    CHECK(strstr(why, "can be written by its group (mode 770)") != NULL);
    CHECK(strstr(why, "Fix: chmod 700") != NULL);
    CHECK(chmod(dir, 0703) == 0); /* others can write */
    CHECK(vyre_cu_disk_read(51, SRC(51), &len) == NULL);
    CHECK(vyre_cuda_cache_refused(why, sizeof why));
    CHECK(strstr(why, "other users") != NULL);
    CHECK(chmod(dir, 0700) == 0);
    got = vyre_cu_disk_read(51, SRC(51), &len);
    CHECK(got != NULL);
    free(got);
    /* another owner (only root can hand a directory to someone else) */
    if (geteuid() == 0) {
        CHECK(chown(dir, 65534, 65534) == 0);
        CHECK(vyre_cu_disk_read(51, SRC(51), &len) == NULL);
        CHECK(!vyre_cu_disk_write(53, SRC(53), blob, sizeof blob, &ev));
        CHECK(vyre_cuda_cache_refused(why, sizeof why));
        CHECK(strstr(why, "is owned by user 65534") != NULL);
        CHECK(chown(dir, 0, 0) == 0);
    }
}

/* Two processes write 150 keys each (payload derived from the key) into a cache capped
 * at about 40 entries while reading back at random: every hit has the right bytes. */
static int hammer(unsigned seed) {
    unsigned char blob[900];
    int bad = 0;
    for (unsigned i = 0; i < 150; i++) {
        uint64_t key = 1000 + (i * 7 + seed) % 200, ev;
        for (size_t b = 0; b < sizeof blob; b++) blob[b] = (unsigned char)(key * 31 + b);
        vyre_cu_disk_write(key, SRC(key), blob, sizeof blob, &ev);
        uint64_t probe = 1000 + (i * 13 + seed * 5) % 200;
        size_t len = 0;
        unsigned char *got = vyre_cu_disk_read(probe, SRC(probe), &len);
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
    CHECK(bytes <= 37000 + 2 * 940); /* each writer may be one file over, briefly */
    CHECK(files > 0);
    unsetenv("VYRE_CACHE_MAX_BYTES");
}

/* Sixteen processes on one cache under injected I/O faults. Half the
 * writers run under a file-size limit smaller than an entry (RLIMIT_FSIZE, SIGXFSZ
 * ignored: their writes fail with EFBIG part-way), and a seventeenth process damages the
 * directory all along: it truncates entries, flips bytes in them, and puts garbage and
 * half-written temp files under cubin names. Every hit any process reads must still be
 * exactly the bytes written for its key: the cache may miss, never serve a corrupt entry. */
static int corrupter(const char *dir, unsigned rounds) {
    unsigned x = 12345;
    for (unsigned r = 0; r < rounds; r++) {
        x = x * 1103515245u + 12345u;
        uint64_t key = 1000 + (x >> 8) % 200;
        char path[400];
        snprintf(path, sizeof path, "%s/%016llx.cubin", dir, (unsigned long long)key);
        int fd = -1;
        switch ((x >> 20) % 4u) {
        case 0: /* truncate an entry */
            if (truncate(path, (off_t)((x >> 4) % 900u)) != 0) break;
            break;
        case 1: /* flip a byte somewhere in it */
            fd = open(path, O_RDWR | O_NOFOLLOW);
            if (fd >= 0) {
                unsigned char b = 0;
                off_t at = (off_t)((x >> 6) % 940u);
                if (pread(fd, &b, 1, at) == 1) {
                    b ^= (unsigned char)(1u << ((x >> 3) % 8u));
                    if (pwrite(fd, &b, 1, at) != 1) break;
                }
            }
            break;
        case 2: /* garbage under a cubin name (written in place, not renamed) */
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
            if (fd >= 0) {
                unsigned char junk[700];
                for (size_t b = 0; b < sizeof junk; b++) junk[b] = (unsigned char)(x >> (b % 24));
                if (write(fd, junk, (x >> 5) % sizeof junk) < 0) break;
            }
            break;
        default: { /* a torn temp file left behind */
            char tmp[420];
            snprintf(tmp, sizeof tmp, "%s/.tmp-%016llx-99999-%u", dir, (unsigned long long)key, r);
            fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd >= 0 && write(fd, "VYRE", 4) < 0) break;
        }
        }
        if (fd >= 0) close(fd);
        if (r % 16 == 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
    return 0;
}

static void test_sixteen_processes_with_faults(void) {
    char dir[300];
    use_dir("sixteen", dir, sizeof dir);
    setenv("VYRE_CACHE_MAX_BYTES", "60000", 1);
    unsigned char blob[16] = {1};
    uint64_t ev;
    vyre_cu_disk_write(1, SRC(1), blob, sizeof blob, &ev); /* makes the directory */
    enum { KIDS = 16 };
    pid_t kids[KIDS + 1];
    for (unsigned k = 0; k < KIDS; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            if (k % 2 == 1) {
                signal(SIGXFSZ, SIG_IGN);
                struct rlimit lim = {500, 500}; /* an entry is about 940 bytes */
                if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(3);
            }
            _exit(hammer(k + 1));
        }
    }
    kids[KIDS] = fork();
    if (kids[KIDS] == 0) _exit(corrupter(dir, 3000));
    for (unsigned k = 0; k <= KIDS; k++) {
        int status = 0;
        CHECK(waitpid(kids[k], &status, 0) == kids[k]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    /* and this process, after the damage: every hit right */
    CHECK(hammer(99) == 0);
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
    CHECK(!vyre_cu_disk_write(3, SRC(3), blob, sizeof blob, &ev));
    CHECK(vyre_cu_disk_read(3, SRC(3), &len) == NULL);
    if (geteuid() == 0) return;
    use_dir("readonly", dir, sizeof dir);
    CHECK(mkdir(dir, 0555) == 0);
    CHECK(!vyre_cu_disk_write(3, SRC(3), blob, sizeof blob, &ev));
    CHECK(vyre_cu_disk_read(3, SRC(3), &len) == NULL);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vyre-test-cache-%ld", (long)getpid());
    mkdir(tmpdir, 0700);
    RUN_TEST(test_cap_sizes);
    RUN_TEST(test_lying_header);
    RUN_TEST(test_stale_temp_files);
    RUN_TEST(test_directory_on_key);
    RUN_TEST(test_two_processes);
    RUN_TEST(test_sixteen_processes_with_faults);
    RUN_TEST(test_unwritable_dirs);
    RUN_TEST(test_swapped_entry);
    RUN_TEST(test_fifo_entry);
    RUN_TEST(test_symlink_entry);
    RUN_TEST(test_directory_trust);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", tmpdir, tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return harness_finish();
}
