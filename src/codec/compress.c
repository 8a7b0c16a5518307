/*-------------------------------------------------------------------------
 *
 * compress.c
 *	  The four compression codecs of Kafka record batches.
 *
 * The codec id sits in the batch attributes (Kafka docs, "Record Batch");
 * the whole records section after the 61-byte header is compressed as one
 * stream.  What is on the wire is whatever the clients' libraries write, so
 * decompression accepts every form real clients produce:
 *
 *	gzip	a gzip stream (RFC 1952), possibly several members, as Java's
 *			GZIPInputStream reads it;
 *	snappy	raw snappy (librdkafka, franz-go) or the xerial framing Java's
 *			SnappyOutputStream writes: "\x82SNAPPY\0", int32 version,
 *			int32 compatible version, then [int32 length][snappy block]*;
 *	lz4		the LZ4 *frame* format (Kafka uses it since magic 1, KIP-57);
 *	zstd	zstd frames (KIP-110), decoded as a stream so that a frame that
 *			does not declare its content size still works.
 *
 * When we compress, we write what every client can read: xerial-framed
 * snappy (Java's reader needs the framing for chunks above 32 KiB,
 * librdkafka and kafka-python detect it), and LZ4 frames with independent
 * 64 KiB blocks (Java's reader refuses linked blocks).
 *
 * Decompression is a zip-bomb boundary: output never grows past the
 * caller's max_out (we let the decoder write one byte more, and that byte
 * is the signal to stop with KP_CODEC_TOO_LARGE), nor past what a palloc'd
 * StringInfo can hold.  The libraries allocate through palloc as well, so a
 * memory-context reset after an ERROR elsewhere frees their state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <snappy-c.h>
#include <zlib.h>
#define LZ4F_STATIC_LINKING_ONLY
#include <lz4frame.h>
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

#include "codec/codec.h"
#ifndef FRONTEND
#include "utils/memutils.h"
#endif

/* Java's SnappyOutputStream header and default block size */
static const char xerial_magic[8] = {(char) 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
#define XERIAL_HEADER_SIZE	16
#define XERIAL_BLOCK_SIZE	(32 * 1024)

/* first output reservation; the buffer then doubles with the output */
#define OUT_CHUNK			(64 * 1024)

/* ---------- palloc-backed allocators for the libraries ---------- */

/*
 * Never ereport from inside a library: refuse what palloc would refuse and
 * report out-of-memory as NULL, which each library turns into an error code.
 */
static void *
kp_lib_alloc(size_t size)
{
	if (size == 0)
		size = 1;
	if (size > MaxAllocSize)
		return NULL;
	return palloc_extended(size, MCXT_ALLOC_NO_OOM);
}

static void
kp_lib_free(void *ptr)
{
	if (ptr != NULL)
		pfree(ptr);
}

static voidpf
zlib_alloc(voidpf opaque, uInt items, uInt size)
{
	if (size != 0 && items > MaxAllocSize / size)
		return Z_NULL;
	return kp_lib_alloc((size_t) items * size);
}

static void
zlib_free(voidpf opaque, voidpf ptr)
{
	kp_lib_free(ptr);
}

static void *
lib_alloc_opaque(void *opaque, size_t size)
{
	return kp_lib_alloc(size);
}

static void
lib_free_opaque(void *opaque, void *ptr)
{
	kp_lib_free(ptr);
}

/* ---------- bounded output ---------- */

/*
 * Output state of one decompression: dst grows from start_len and may hold
 * at most 'limit' decompressed bytes; room for limit + 1 is offered so that
 * a decoder that has more to give shows it.
 */
typedef struct OutBuf
{
	StringInfo	dst;
	size_t		start_len;
	size_t		limit;
} OutBuf;

static bool
outbuf_init(OutBuf *ob, StringInfo dst, size_t max_out)
{
	size_t		cap;

	ob->dst = dst;
	ob->start_len = dst->len;
	/* enlargeStringInfo refuses len + needed >= MaxAllocSize */
	if ((size_t) dst->len + 2 >= MaxAllocSize)
		return false;
	cap = MaxAllocSize - 2 - (size_t) dst->len;
	ob->limit = Min(max_out, cap);
	return true;
}

static inline size_t
outbuf_produced(const OutBuf *ob)
{
	return (size_t) ob->dst->len - ob->start_len;
}

/*
 * Make room for more output and return where it goes and how much fits.
 * Growth is geometric (at least the size produced so far) but never past
 * limit + 1 produced bytes.  Returns 0 when the allowance is spent.
 */
static size_t
outbuf_reserve(OutBuf *ob, char **out)
{
	size_t		produced = outbuf_produced(ob);
	size_t		allowance = ob->limit + 1 - produced;
	size_t		want;
	size_t		room;

	if (produced > ob->limit)
		return 0;
	room = (size_t) (ob->dst->maxlen - ob->dst->len - 1);
	if (room == 0)
	{
		want = Min(Max((size_t) OUT_CHUNK, produced), allowance);
		enlargeStringInfo(ob->dst, (int) want);
		room = (size_t) (ob->dst->maxlen - ob->dst->len - 1);
	}
	*out = ob->dst->data + ob->dst->len;
	return Min(room, allowance);
}

static inline void
outbuf_advance(OutBuf *ob, size_t n)
{
	ob->dst->len += (int) n;
	ob->dst->data[ob->dst->len] = '\0';
}

static inline bool
outbuf_over(const OutBuf *ob)
{
	return outbuf_produced(ob) > ob->limit;
}

/*
 * Room for a compressor's worst case (bound bytes) at the end of dst, or
 * NULL if that would not fit in a palloc'd buffer; commit what it wrote.
 */
static char *
dst_reserve(StringInfo dst, size_t bound)
{
	if ((size_t) dst->len + bound + 1 >= MaxAllocSize)
		return NULL;
	enlargeStringInfo(dst, (int) bound);
	return dst->data + dst->len;
}

static void
dst_commit(StringInfo dst, size_t n)
{
	dst->len += (int) n;
	dst->data[dst->len] = '\0';
}

/* ---------- gzip ---------- */

static bool
gzip_compress(const char *src, size_t len, StringInfo dst)
{
	z_stream	zs;
	bool		ok = false;
	uLong		bound;

	if (len > MaxAllocSize)
		return false;
	memset(&zs, 0, sizeof(zs));
	zs.zalloc = zlib_alloc;
	zs.zfree = zlib_free;
	/* windowBits 15 + 16: a gzip wrapper, which is what Kafka's gzip means */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
					 Z_DEFAULT_STRATEGY) != Z_OK)
		return false;
	bound = deflateBound(&zs, (uLong) len);
	zs.next_out = (Bytef *) dst_reserve(dst, bound);
	if (zs.next_out != NULL)
	{
		zs.next_in = (Bytef *) src;
		zs.avail_in = (uInt) len;
		zs.avail_out = (uInt) bound;
		if (deflate(&zs, Z_FINISH) == Z_STREAM_END)
		{
			dst_commit(dst, zs.total_out);
			ok = true;
		}
	}
	deflateEnd(&zs);
	return ok;
}

static KpCodecError
gzip_decompress(const char *src, size_t len, OutBuf *ob)
{
	z_stream	zs;
	KpCodecError err = KP_CODEC_BAD_COMPRESSION;

	memset(&zs, 0, sizeof(zs));
	zs.zalloc = zlib_alloc;
	zs.zfree = zlib_free;
	/* 15 + 16: gzip only, as Kafka's gzip codec is GZIPInputStream */
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return KP_CODEC_BAD_COMPRESSION;
	zs.next_in = (Bytef *) src;
	zs.avail_in = (uInt) len;	/* len < 2^31: it came in a batch */

	for (;;)
	{
		char	   *out;
		size_t		room = outbuf_reserve(ob, &out);
		uInt		before;
		int			rc;

		if (room == 0)
		{
			err = KP_CODEC_TOO_LARGE;
			break;
		}
		zs.next_out = (Bytef *) out;
		zs.avail_out = (uInt) Min(room, (size_t) PG_INT32_MAX);
		before = zs.avail_out;
		rc = inflate(&zs, Z_NO_FLUSH);
		outbuf_advance(ob, before - zs.avail_out);
		if (outbuf_over(ob))
		{
			err = KP_CODEC_TOO_LARGE;
			break;
		}
		if (rc == Z_STREAM_END)
		{
			/*
			 * Another gzip member may follow (GZIPInputStream reads them
			 * all); anything else after a member is ignored, as there.
			 */
			if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b)
			{
				if (inflateReset(&zs) != Z_OK)
					break;
				continue;
			}
			err = KP_CODEC_OK;
			break;
		}
		if (rc == Z_OK)
			continue;
		/* Z_BUF_ERROR with output room left means the input ran out */
		if (rc == Z_BUF_ERROR && zs.avail_out == 0)
			continue;
		break;					/* data error, truncated stream, ... */
	}
	inflateEnd(&zs);
	return err;
}

/* ---------- snappy ---------- */

/* Java-compatible: xerial framing in 32 KiB blocks. */
static bool
snappy_compress_xerial(const char *src, size_t len, StringInfo dst)
{
	size_t		blocks = len / XERIAL_BLOCK_SIZE + 1;
	size_t		bound;

	bound = XERIAL_HEADER_SIZE +
		blocks * (4 + snappy_max_compressed_length(XERIAL_BLOCK_SIZE));
	if (dst_reserve(dst, bound) == NULL)
		return false;

	memcpy(dst->data + dst->len, xerial_magic, sizeof(xerial_magic));
	kp_put_int32(dst->data + dst->len + 8, 1);	/* version */
	kp_put_int32(dst->data + dst->len + 12, 1); /* compatible version */
	dst->len += XERIAL_HEADER_SIZE;

	for (size_t off = 0; off < len; off += XERIAL_BLOCK_SIZE)
	{
		size_t		n = Min((size_t) XERIAL_BLOCK_SIZE, len - off);
		size_t		clen = snappy_max_compressed_length(n);

		if (snappy_compress(src + off, n, dst->data + dst->len + 4, &clen) != SNAPPY_OK)
			return false;
		kp_put_int32(dst->data + dst->len, (int32) clen);
		dst_commit(dst, 4 + clen);
	}
	return true;
}

/* Inflate one raw snappy block, refusing it before allocating if too big. */
static KpCodecError
snappy_block(const char *src, size_t len, OutBuf *ob)
{
	size_t		ulen;
	size_t		produced = outbuf_produced(ob);

	if (snappy_uncompressed_length(src, len, &ulen) != SNAPPY_OK)
		return KP_CODEC_BAD_COMPRESSION;
	if (ulen > ob->limit - produced)
		return KP_CODEC_TOO_LARGE;
	enlargeStringInfo(ob->dst, (int) ulen);
	if (snappy_uncompress(src, len, ob->dst->data + ob->dst->len, &ulen) != SNAPPY_OK)
		return KP_CODEC_BAD_COMPRESSION;
	outbuf_advance(ob, ulen);
	return KP_CODEC_OK;
}

static KpCodecError
snappy_decompress(const char *src, size_t len, OutBuf *ob)
{
	const char *p;
	const char *end = src + len;

	if (len < XERIAL_HEADER_SIZE || memcmp(src, xerial_magic, sizeof(xerial_magic)) != 0)
		return snappy_block(src, len, ob);

	/* xerial: skip the two version ints, then [int32 length][block]* */
	p = src + XERIAL_HEADER_SIZE;
	while (p < end)
	{
		int32		clen;
		KpCodecError err;

		if (end - p < 4)
			return KP_CODEC_BAD_COMPRESSION;
		clen = kp_get_int32(p);
		p += 4;
		if (clen < 0 || clen > end - p)
			return KP_CODEC_BAD_COMPRESSION;
		err = snappy_block(p, clen, ob);
		if (err != KP_CODEC_OK)
			return err;
		p += clen;
	}
	return KP_CODEC_OK;
}

/* ---------- lz4 ---------- */

static const LZ4F_CustomMem lz4_mem = {
	lib_alloc_opaque, NULL, lib_free_opaque, NULL
};

static bool
lz4_compress(const char *src, size_t len, StringInfo dst)
{
	LZ4F_preferences_t prefs;
	size_t		bound;
	size_t		n;
	char	   *out;

	memset(&prefs, 0, sizeof(prefs));
	prefs.frameInfo.blockSizeID = LZ4F_max64KB;
	prefs.frameInfo.blockMode = LZ4F_blockIndependent;	/* Java requires it */
	bound = LZ4F_compressFrameBound(len, &prefs);
	out = dst_reserve(dst, bound);
	if (out == NULL)
		return false;
	n = LZ4F_compressFrame(out, bound, src, len, &prefs);
	if (LZ4F_isError(n))
		return false;
	dst_commit(dst, n);
	return true;
}

static KpCodecError
lz4_decompress(const char *src, size_t len, OutBuf *ob)
{
	LZ4F_dctx  *dctx;
	KpCodecError err = KP_CODEC_BAD_COMPRESSION;
	const char *p = src;
	const char *end = src + len;
	size_t		hint;

	dctx = LZ4F_createDecompressionContext_advanced(lz4_mem, LZ4F_VERSION);
	if (dctx == NULL)
		return KP_CODEC_TOO_LARGE;	/* out of memory */

	/*
	 * Feed input until it is used up and the frame is complete (hint 0);
	 * after the input ends the decoder may still hold output of the last
	 * block, so keep calling while it makes progress.  A frame that ends
	 * early stops making progress: that is a truncated stream.  Another frame
	 * may follow a complete one.
	 */
	for (;;)
	{
		char	   *out;
		size_t		room = outbuf_reserve(ob, &out);
		size_t		in_size = end - p;

		if (room == 0)
		{
			err = KP_CODEC_TOO_LARGE;
			goto done;
		}
		hint = LZ4F_decompress(dctx, out, &room, p, &in_size, NULL);
		if (LZ4F_isError(hint))
			goto done;
		p += in_size;
		outbuf_advance(ob, room);
		if (outbuf_over(ob))
		{
			err = KP_CODEC_TOO_LARGE;
			goto done;
		}
		if (hint == 0 && p >= end)
			break;
		if (in_size == 0 && room == 0)
			goto done;			/* no progress: truncated or stuck */
	}
	err = KP_CODEC_OK;
done:
	LZ4F_freeDecompressionContext(dctx);
	return err;
}

/* ---------- zstd ---------- */

static bool
zstd_compress(const char *src, size_t len, StringInfo dst)
{
	size_t		bound = ZSTD_compressBound(len);
	size_t		n;

	char	   *out;

	if (ZSTD_isError(bound) || (out = dst_reserve(dst, bound)) == NULL)
		return false;
	n = ZSTD_compress(out, bound, src, len, ZSTD_CLEVEL_DEFAULT);
	if (ZSTD_isError(n))
		return false;
	dst_commit(dst, n);
	return true;
}

static KpCodecError
zstd_decompress(const char *src, size_t len, OutBuf *ob)
{
	static const ZSTD_customMem zmem = {lib_alloc_opaque, lib_free_opaque, NULL};
	ZSTD_DCtx  *dctx;
	ZSTD_inBuffer in = {src, len, 0};
	KpCodecError err = KP_CODEC_BAD_COMPRESSION;
	size_t		rc = 1;
	int			window_log = 23;

	dctx = ZSTD_createDCtx_advanced(zmem);
	if (dctx == NULL)
		return KP_CODEC_TOO_LARGE;

	/*
	 * A frame's window is memory the decoder allocates before producing a
	 * byte, so a tiny frame could ask for zstd's default maximum of 128 MiB.
	 * Frames that do not declare their content size (Java's streaming
	 * ZstdOutputStream) declare the window of their compression level: 2 MiB
	 * at Kafka's default level 3, 8 MiB up to level 19.  So allow 8 MiB, or
	 * what the output limit could need, up to zstd's default.
	 */
	while (window_log < ZSTD_WINDOWLOG_LIMIT_DEFAULT &&
		   ((size_t) 1 << window_log) < ob->limit)
		window_log++;
	if (ZSTD_isError(ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, window_log)))
		goto done;

	while (in.pos < in.size || rc != 0)
	{
		char	   *out;
		size_t		room = outbuf_reserve(ob, &out);
		ZSTD_outBuffer ob_z;
		size_t		in_before = in.pos;

		if (room == 0)
		{
			err = KP_CODEC_TOO_LARGE;
			goto done;
		}
		ob_z.dst = out;
		ob_z.size = room;
		ob_z.pos = 0;
		rc = ZSTD_decompressStream(dctx, &ob_z, &in);
		if (ZSTD_isError(rc))
		{
			if (ZSTD_getErrorCode(rc) == ZSTD_error_frameParameter_windowTooLarge)
				err = KP_CODEC_TOO_LARGE;
			goto done;
		}
		outbuf_advance(ob, ob_z.pos);
		if (outbuf_over(ob))
		{
			err = KP_CODEC_TOO_LARGE;
			goto done;
		}
		/* no input taken and no output made although there was room */
		if (in.pos == in_before && ob_z.pos == 0)
			goto done;
	}
	err = KP_CODEC_OK;
done:
	ZSTD_freeDCtx(dctx);
	return err;
}

/* ---------- entry points ---------- */

/*
 * Compress src and append the result to dst.  Returns false if the codec
 * fails or the output could not fit in a palloc'd buffer.
 */
bool
kp_compress(KpCompression codec, const char *src, size_t len, StringInfo dst)
{
	switch (codec)
	{
		case KP_COMPRESSION_NONE:
			if ((size_t) dst->len + len + 1 >= MaxAllocSize)
				return false;
			appendBinaryStringInfo(dst, src, (int) len);
			return true;
		case KP_COMPRESSION_GZIP:
			return gzip_compress(src, len, dst);
		case KP_COMPRESSION_SNAPPY:
			return snappy_compress_xerial(src, len, dst);
		case KP_COMPRESSION_LZ4:
			return lz4_compress(src, len, dst);
		case KP_COMPRESSION_ZSTD:
			return zstd_compress(src, len, dst);
	}
	return false;
}

/*
 * Decompress src and append to dst, at most max_out bytes.  On error dst
 * may hold partial output past its old length; its len is left wherever the
 * decoder stopped, and callers discard it.
 */
KpCodecError
kp_decompress(KpCompression codec, const char *src, size_t len,
			  StringInfo dst, size_t max_out)
{
	OutBuf		ob;

	if (len > PG_INT32_MAX)
		return KP_CODEC_TOO_LARGE;
	if (!outbuf_init(&ob, dst, max_out))
		return KP_CODEC_TOO_LARGE;

	switch (codec)
	{
		case KP_COMPRESSION_NONE:
			if (len > ob.limit)
				return KP_CODEC_TOO_LARGE;
			appendBinaryStringInfo(dst, src, (int) len);
			return KP_CODEC_OK;
		case KP_COMPRESSION_GZIP:
			return gzip_decompress(src, len, &ob);
		case KP_COMPRESSION_SNAPPY:
			return snappy_decompress(src, len, &ob);
		case KP_COMPRESSION_LZ4:
			return lz4_decompress(src, len, &ob);
		case KP_COMPRESSION_ZSTD:
			return zstd_decompress(src, len, &ob);
	}
	return KP_CODEC_BAD_COMPRESSION;
}

static const char *const codec_names[] = {"none", "gzip", "snappy", "lz4", "zstd"};

const char *
kp_compression_name(KpCompression codec)
{
	if ((int) codec < 0 || (int) codec > KP_COMPRESSION_ZSTD)
		return "unknown";
	return codec_names[codec];
}

/*
 * Codec from a compression.type value.  "uncompressed" is the topic config
 * spelling of none; "producer" (keep what the producer sent) is not a codec
 * and is left to the caller.
 */
bool
kp_compression_from_name(const char *name, KpCompression *codec)
{
	if (name == NULL)
		return false;
	if (pg_strcasecmp(name, "uncompressed") == 0)
	{
		*codec = KP_COMPRESSION_NONE;
		return true;
	}
	for (int i = 0; i <= KP_COMPRESSION_ZSTD; i++)
	{
		if (pg_strcasecmp(name, codec_names[i]) == 0)
		{
			*codec = (KpCompression) i;
			return true;
		}
	}
	return false;
}
