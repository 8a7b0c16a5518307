/*-------------------------------------------------------------------------
 *
 * replay.c
 *	  Runs fuzz_batch's target over files, without libFuzzer.
 *
 * `make -C fuzz replay` builds this with ASan and UBSan and runs every file
 * of the seed corpus (and of any folder given), so the corpus is a
 * regression test that needs no fuzzing toolchain beyond a compiler.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

extern int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
run_file(const char *path)
{
	FILE	   *f = fopen(path, "rb");
	long		n;
	uint8_t    *data;

	if (f == NULL)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = pg_malloc(n > 0 ? n : 1);
	if (fread(data, 1, n, f) != (size_t) n)
	{
		fclose(f);
		pg_free(data);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(data, n);
	pg_free(data);
	return 0;
}

int
main(int argc, char **argv)
{
	int			count = 0;

	for (int a = 1; a < argc; a++)
	{
		struct stat st;
		DIR		   *d;
		struct dirent *e;

		if (stat(argv[a], &st) != 0)
		{
			fprintf(stderr, "replay: cannot stat %s\n", argv[a]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode))
		{
			if (run_file(argv[a]) != 0)
				return 1;
			count++;
			continue;
		}
		d = opendir(argv[a]);
		while (d && (e = readdir(d)) != NULL)
		{
			char		path[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[a], e->d_name);
			if (run_file(path) != 0)
			{
				fprintf(stderr, "replay: cannot read %s\n", path);
				return 1;
			}
			count++;
		}
		if (d)
			closedir(d);
	}
	printf("replay: %d inputs ran clean\n", count);
	return count > 0 ? 0 : 1;
}
