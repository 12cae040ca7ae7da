// JPEG decode and encode on libjpeg-turbo's libjpeg API (for scaled and cropped decode).
#pragma once
#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

#include "codec.h"

// libjpeg-turbo 3 decodes 12-bit (lossy) and 2- to 16-bit lossless JPEG; older
// libraries decode 8-bit lossy JPEG only.
#if defined(LIBJPEG_TURBO_VERSION_NUMBER) && LIBJPEG_TURBO_VERSION_NUMBER >= 3000000
#define TRIVIUM_JPEG_WIDE 1
#else
#define TRIVIUM_JPEG_WIDE 0
#endif

namespace trivium {

// A region of interest in source-image pixels: rows [top, top+height), columns
// [left, left+width).
struct Roi {
    int64_t top = 0, left = 0, height = 0, width = 0;
};

// Decodes one JPEG in two steps so that the caller can allocate the output
// between them: prepare() reads the header and fixes the output shape, decode()
// writes pixels. libjpeg reports errors by longjmp, so these methods hold no
// objects with destructors across libjpeg calls.
class JpegDecoder {
public:
    JpegDecoder(const uint8_t* data, size_t size, Diagnostics* diag);
    ~JpegDecoder();
    JpegDecoder(const JpegDecoder&) = delete;
    JpegDecoder& operator=(const JpegDecoder&) = delete;

    bool read_header(ImageHeader* header);
    // scale_num in 1..8 selects a scale of scale_num/8; roi may be null.
    bool prepare(ReadMode mode, int scale_num, const Roi* roi, int64_t max_pixels,
                 OutputShape* shape);
    // Writes shape.height rows of shape.width * shape.channels samples, `row_stride`
    // bytes apart: uint8 for 8-bit JPEGs, else uint16 (see decode_wide).
    // With `strict`, the first damage fails the decode; otherwise it is recorded in
    // the diagnostics and decoding goes on (see codec.h). Data that ends before the
    // image's EOI marker ("Premature end of JPEG file") makes the decode partial.
    bool decode(uint8_t* dst, ptrdiff_t row_stride, bool strict);

    struct ErrorManager {
        jpeg_error_mgr pub;
        std::jmp_buf jump;
        Diagnostics* diag;
        bool strict = false;
    };

private:
    enum class RowConversion { None, GrayToGrayAlpha, CmykToRgb, CmykToRgba, CmykToGray, CmykToGrayAlpha };

    bool start();
    bool read_rows_in_place(uint8_t* dst, ptrdiff_t row_stride);
    void finish_decode();
    void convert_row(const uint8_t* src, uint8_t* dst, int width) const;
    // 12-bit and lossless JPEGs: rows decoded into a scratch row of the library's
    // sample type, then converted to the output channels with every sample
    // bit-replicated to the output's full range (uint8 up to 8 bits, else uint16).
    bool choose_wide_output(int channels);
    template <typename Sample, typename Out>
    bool decode_wide(uint8_t* dst, ptrdiff_t row_stride);

    const uint8_t* data_;
    size_t size_;
    Diagnostics* diag_;
    jpeg_decompress_struct cinfo_;
    ErrorManager err_;
    jpeg_progress_mgr progress_;
    bool header_read_ = false;
    bool started_ = false;
    RowConversion conversion_ = RowConversion::None;
    int decoded_channels_ = 0;  // channels libjpeg writes per pixel
    int precision_ = 8;         // bits per sample in the file
    bool lossless_ = false;     // the lossless (predictive, SOF3) process
    OutputShape shape_;
    // Output region in scaled-image coordinates.
    JDIMENSION region_top_ = 0, region_left_ = 0, region_width_ = 0, region_height_ = 0;
};

struct JpegEncodeOptions {
    int quality = 75;
    int subsampling = 420;  // 444, 422, 420 or 440 (ignored for gray)
    bool progressive = false;
    bool optimize = false;
    // 8: uint8 samples; 12: uint16 samples of which the top 12 bits are written (the
    // inverse of the decode's bit replication), as a 12-bit JPEG.
    int precision = 8;
};

// Encodes height x width x channels (1 = gray, 3 = RGB) pixels (uint8, or uint16
// for precision 12) with rows `row_stride` bytes apart. On success *data holds
// *size bytes of JPEG: the encoder's own malloc'd buffer (no copy), which the caller
// frees with std::free.
bool encode_jpeg(const void* pixels, int height, int width, int channels,
                 ptrdiff_t row_stride, const JpegEncodeOptions& options, uint8_t** data,
                 size_t* size, Diagnostics* diag);

// Encodes 3 x height x width 8-bit RGB planes (C-contiguous, as a [3, H, W] tensor;
// options.precision must be 8), reading the planes in place: no (H, W, C) copy of the
// image. Output as for encode_jpeg.
bool encode_jpeg_planes(const uint8_t* planes, int height, int width,
                        const JpegEncodeOptions& options, uint8_t** data, size_t* size,
                        Diagnostics* diag);

}  // namespace trivium
