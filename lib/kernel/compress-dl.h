/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <lzma.h>
#include <zstd.h>

/* liblzma and libzstd, loaded when a package is read (lib/dl.h says why). */
extern typeof(lzma_code) *sym_lzma_code;
extern typeof(lzma_cputhreads) *sym_lzma_cputhreads;
extern typeof(lzma_end) *sym_lzma_end;
extern typeof(lzma_stream_decoder) *sym_lzma_stream_decoder;
extern typeof(lzma_stream_decoder_mt) *sym_lzma_stream_decoder_mt;
extern typeof(ZSTD_createDCtx) *sym_ZSTD_createDCtx;
extern typeof(ZSTD_decompressStream) *sym_ZSTD_decompressStream;
extern typeof(ZSTD_freeDCtx) *sym_ZSTD_freeDCtx;
extern typeof(ZSTD_getErrorName) *sym_ZSTD_getErrorName;
extern typeof(ZSTD_isError) *sym_ZSTD_isError;

int ks_dlopen_liblzma(const char **ret_error);
int ks_dlopen_libzstd(const char **ret_error);
