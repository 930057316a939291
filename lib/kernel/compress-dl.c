/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "lib/kernel/compress-dl.h"
#include "lib/basic/dl.h"
#include "lib/basic/util.h"

typeof(lzma_code) *sym_lzma_code;
typeof(lzma_cputhreads) *sym_lzma_cputhreads;
typeof(lzma_end) *sym_lzma_end;
typeof(lzma_stream_decoder) *sym_lzma_stream_decoder;
typeof(lzma_stream_decoder_mt) *sym_lzma_stream_decoder_mt;
typeof(ZSTD_createDCtx) *sym_ZSTD_createDCtx;
typeof(ZSTD_decompressStream) *sym_ZSTD_decompressStream;
typeof(ZSTD_freeDCtx) *sym_ZSTD_freeDCtx;
typeof(ZSTD_getErrorName) *sym_ZSTD_getErrorName;
typeof(ZSTD_isError) *sym_ZSTD_isError;

static const ks_dl_symbol lzma_symbols[] = {
    KS_DL_SYMBOL(lzma_code),           KS_DL_SYMBOL(lzma_cputhreads),        KS_DL_SYMBOL(lzma_end),
    KS_DL_SYMBOL(lzma_stream_decoder), KS_DL_SYMBOL(lzma_stream_decoder_mt),
};

static const ks_dl_symbol zstd_symbols[] = {
    KS_DL_SYMBOL(ZSTD_createDCtx), KS_DL_SYMBOL(ZSTD_decompressStream),
    KS_DL_SYMBOL(ZSTD_freeDCtx),   KS_DL_SYMBOL(ZSTD_getErrorName),
    KS_DL_SYMBOL(ZSTD_isError),
};

int ks_dlopen_liblzma(const char **ret_error)
{
    static ks_dl_library lib = {
        .soname = "liblzma.so.5",
        .package = "liblzma5",
        .symbols = lzma_symbols,
        .n_symbols = ARRAY_SIZE(lzma_symbols),
    };
    return ks_dlopen_library(&lib, ret_error);
}

int ks_dlopen_libzstd(const char **ret_error)
{
    static ks_dl_library lib = {
        .soname = "libzstd.so.1",
        .package = "libzstd1",
        .symbols = zstd_symbols,
        .n_symbols = ARRAY_SIZE(zstd_symbols),
    };
    return ks_dlopen_library(&lib, ret_error);
}
