/* SPDX-License-Identifier: MIT */
/*
 * Replays inputs through a fuzz harness without libFuzzer: linked with one
 * tests/fuzz/fuzz_<name>.c on the normal build (make builds
 * build/tests/fuzz/replay_<name>), it calls LLVMFuzzerTestOneInput once per
 * file.  Arguments are files or directories (their regular files, in name
 * order).  A crash or a sanitizer report ends it with the file named on
 * stderr just before; it exits 0 after "replayed N inputs", 2 when an
 * argument cannot be read.
 *
 *   build/tests/fuzz/replay_json tests/fuzz/corpus/json tests/fuzz/crashes/json
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

#define REPLAY_MAX (16u << 20)

static int one(const char *path, unsigned *n)
{
	struct stat st;
	uint8_t *buf;
	ssize_t r;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (off_t)REPLAY_MAX) {
		fprintf(stderr, "replay: cannot read '%s'\n", path);
		if (fd >= 0)
			close(fd);
		return 2;
	}
	/* exactly the input's size, so that the sanitizer sees any overread */
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return 2;
	}
	while (got < (size_t)st.st_size && (r = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)r;
	close(fd);
	fprintf(stderr, "replay: %s\n", path);
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	(*n)++;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dir(const char *path, unsigned *n)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char **names = NULL;
	size_t k = 0, cap = 0, i;
	int ret = 0;

	if (!d) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", path, strerror(errno));
		return 2;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (k == cap) {
			char **nn;

			cap = cap ? 2 * cap : 64;
			nn = realloc(names, cap * sizeof(*nn));
			if (!nn)
				break;
			names = nn;
		}
		if (asprintf(&names[k], "%s/%s", path, de->d_name) < 0)
			break;
		k++;
	}
	closedir(d);
	if (k)
		qsort(names, k, sizeof(*names), cmp);
	for (i = 0; i < k; i++) {
		if (!ret)
			ret = one(names[i], n);
		free(names[i]);
	}
	free(names);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned n = 0;
	int i, ret = 0;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc && !ret; i++) {
		struct stat st;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: cannot read '%s': %s\n", argv[i], strerror(errno));
			ret = 2;
		} else {
			ret = S_ISDIR(st.st_mode) ? dir(argv[i], &n) : one(argv[i], &n);
		}
	}
	printf("replayed %u inputs\n", n);
	return ret;
}
