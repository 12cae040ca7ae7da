#include "jpeg_codec.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <jerror.h>

#include "exif.h"
#include "jpeg_color.h"
#include "jpeg_upsample.h"

namespace trivium {
namespace {

constexpr int kMaxScans = 1000;  // hostile progressive files can hold thousands of tiny scans
constexpr int kExifMarker = JPEG_APP0 + 1;

void on_error_exit(j_common_ptr cinfo) {
    auto* err = reinterpret_cast<JpegDecoder::ErrorManager*>(cinfo->err);
    char buffer[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, buffer);
    const int code = cinfo->err->msg_code;
    const bool unsupported = code == JERR_SOF_UNSUPPORTED || code == JERR_ARITH_NOTIMPL ||
                             code == JERR_NOT_COMPILED || code == JERR_CONVERSION_NOTIMPL ||
                             code == JERR_BAD_PRECISION;
    err->diag->fail(unsupported ? ErrorKind::Unsupported : ErrorKind::Corrupt, buffer);
    std::longjmp(err->jump, 1);
}

// Warnings that mean the data is damaged: pixels were lost or invented, or bytes the
// format does not allow were skipped (as opposed to harmless oddities such as an
// unknown JFIF revision).
bool warning_is_damage(int code) {
    switch (code) {
        case JWRN_JPEG_EOF:
        case JWRN_HIT_MARKER:
        case JWRN_HUFF_BAD_CODE:
        case JWRN_MUST_RESYNC:
        case JWRN_NOT_SEQUENTIAL:
        case JWRN_BOGUS_PROGRESSION:
        case JWRN_EXTRANEOUS_DATA:
#ifdef JWRN_ARITH_BAD_CODE
        case JWRN_ARITH_BAD_CODE:
#endif
            return true;
        default:
            return false;
    }
}

void on_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    auto* err = reinterpret_cast<JpegDecoder::ErrorManager*>(cinfo->err);
    cinfo->err->num_warnings++;
    const int code = cinfo->err->msg_code;
    const bool damage = warning_is_damage(code);
    // The source ran out before the EOI marker: the file was cut short.
    const bool truncation = code == JWRN_JPEG_EOF;
    // Damaged data can raise a warning every few bytes: format only the ones kept.
    if (err->diag->warnings.size() >= Diagnostics::kMaxWarnings && !err->strict) {
        err->diag->corrupt = err->diag->corrupt || damage;
        err->diag->partial = err->diag->partial || truncation;
        return;
    }
    char buffer[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, buffer);
    if (damage && err->strict) {
        // Strict decoding: fail at the first damage instead of decoding the rest.
        err->diag->fail(ErrorKind::Corrupt, std::string("corrupt image data (") + buffer + ")");
        std::longjmp(err->jump, 1);
    }
    err->diag->warn(buffer, damage, truncation);
}

void on_progress(j_common_ptr cinfo) {
    auto* dinfo = reinterpret_cast<j_decompress_ptr>(cinfo);
    if (dinfo->input_scan_number > kMaxScans) {
        auto* err = reinterpret_cast<JpegDecoder::ErrorManager*>(cinfo->err);
        err->diag->fail(ErrorKind::Corrupt,
                        "more than " + std::to_string(kMaxScans) + " progressive scans");
        std::longjmp(err->jump, 1);
    }
}

const char* color_space_name(J_COLOR_SPACE cs) {
    switch (cs) {
        case JCS_GRAYSCALE: return "gray";
        case JCS_YCbCr: return "YCbCr";
        case JCS_RGB: return "RGB";
        case JCS_CMYK: return "CMYK";
        case JCS_YCCK: return "YCCK";
        default: return "unknown";
    }
}

bool is_cmyk(J_COLOR_SPACE cs) { return cs == JCS_CMYK || cs == JCS_YCCK; }

int unchanged_channels(J_COLOR_SPACE cs) { return cs == JCS_GRAYSCALE ? 1 : 3; }

int mode_channels(ReadMode mode, J_COLOR_SPACE cs) {
    switch (mode) {
        case ReadMode::Gray: return 1;
        case ReadMode::GrayAlpha: return 2;
        case ReadMode::RGB: return 3;
        case ReadMode::RGBA: return 4;
        default: return unchanged_channels(cs);
    }
}

int find_orientation(j_decompress_ptr cinfo) {
    for (jpeg_saved_marker_ptr m = cinfo->marker_list; m != nullptr; m = m->next) {
        if (m->marker == kExifMarker && m->data_length >= 6 &&
            std::memcmp(m->data, "Exif\0\0", 6) == 0) {
            return exif_orientation(m->data + 6, m->data_length - 6);
        }
    }
    return 0;
}

// Pillow's CMYK -> RGB, on the inverted samples Adobe writes (as libjpeg returns them).
inline uint8_t cmyk_channel(uint8_t inverted_c, uint8_t inverted_k) {
    uint32_t c = 255u - inverted_c, nk = inverted_k;
    uint32_t t = c * nk + 128;
    int v = int(nk) - int(((t >> 8) + t) >> 8);
    return uint8_t(v < 0 ? 0 : v);
}

bool is_lossless(const jpeg_decompress_struct& cinfo) {
    // jpeg_read_header sizes the data unit: 8x8 DCT blocks, or single samples in
    // the lossless process (whose SOF type libjpeg does not expose).
#if JPEG_LIB_VERSION >= 70
    return cinfo.min_DCT_h_scaled_size == 1;
#else
    return cinfo.min_DCT_scaled_size == 1;
#endif
}

#if TRIVIUM_JPEG_WIDE
// One row at a time through the libjpeg entry points of each sample type.
JDIMENSION read_row(j_decompress_ptr cinfo, JSAMPLE* row) {
    return jpeg_read_scanlines(cinfo, &row, 1);
}
JDIMENSION read_row(j_decompress_ptr cinfo, J12SAMPLE* row) {
    return jpeg12_read_scanlines(cinfo, &row, 1);
}
JDIMENSION read_row(j_decompress_ptr cinfo, J16SAMPLE* row) {
    return jpeg16_read_scanlines(cinfo, &row, 1);
}
// Cropping and skipping exist for lossy 8- and 12-bit decodes only.
void crop_row(j_decompress_ptr cinfo, JDIMENSION* left, JDIMENSION* width, JSAMPLE*) {
    jpeg_crop_scanline(cinfo, left, width);
}
void crop_row(j_decompress_ptr cinfo, JDIMENSION* left, JDIMENSION* width, J12SAMPLE*) {
    jpeg12_crop_scanline(cinfo, left, width);
}
void crop_row(j_decompress_ptr, JDIMENSION*, JDIMENSION*, J16SAMPLE*) {}
void skip_rows(j_decompress_ptr cinfo, JDIMENSION rows, JSAMPLE*) {
    jpeg_skip_scanlines(cinfo, rows);
}
void skip_rows(j_decompress_ptr cinfo, JDIMENSION rows, J12SAMPLE*) {
    jpeg12_skip_scanlines(cinfo, rows);
}
void skip_rows(j_decompress_ptr, JDIMENSION, J16SAMPLE*) {}
#endif

// The chroma layouts whose upsampling and colour conversion the decoder does itself
// (jpeg_upsample.h) from libjpeg's raw planes.
enum class OwnUpsampling { None, H2V1, H2V2 };

// The IDCT output size of a component's blocks, and the smallest over the components
// (libjpeg-turbo's _DCT_scaled_size and _min_DCT_scaled_size: jpeglib.h names them by
// API version; turbo keeps the horizontal and vertical sizes equal).
#if JPEG_LIB_VERSION >= 70
int dct_scaled_size(const jpeg_component_info& comp) { return comp.DCT_h_scaled_size; }
int min_dct_scaled_size(const jpeg_decompress_struct& c) { return c.min_DCT_h_scaled_size; }
#else
int dct_scaled_size(const jpeg_component_info& comp) { return comp.DCT_scaled_size; }
int min_dct_scaled_size(const jpeg_decompress_struct& c) { return c.min_DCT_scaled_size; }
#endif

// Which applies to this decode: 8-bit YCbCr at 4:2:0 or 4:2:2 to RGB, on AVX2 CPUs,
// where libjpeg would upsample the chroma 2x with its fancy (triangle) filter. Decided
// as jdsample.c's jinit_upsampler decides, from the component sizes that
// jpeg_calc_output_dimensions chose for the scale: a DCT-scaled decode often scales
// the chroma IDCT up instead (4:2:0 below 8/8: chroma at twice the luma's size, no
// upsampling), and at a 1/8 scale libjpeg upsamples by repetition.
OwnUpsampling own_upsampling(const jpeg_decompress_struct& c) {
    if (c.jpeg_color_space != JCS_YCbCr || c.num_components != 3 ||
        c.out_color_space != JCS_EXT_RGB || c.data_precision != 8 ||
        !c.do_fancy_upsampling || c.CCIR601_sampling || !ycc_vectorised()) {
        return OwnUpsampling::None;
    }
    // jdsample.c: no fancy upsampling where the IDCT gives 1x1 blocks. (Scales above
    // 8/8, whose iMCU rows RawPlanes does not hold, are not asked for.)
    const int min_size = min_dct_scaled_size(c);
    if (min_size <= 1 || min_size > DCTSIZE) return OwnUpsampling::None;
    const jpeg_component_info* comp = c.comp_info;
    if (comp[0].h_samp_factor != 2 || dct_scaled_size(comp[0]) != min_size) {
        return OwnUpsampling::None;
    }
    // Chroma blocks the luma's size at half its sampling factors: 2x horizontally.
    for (int ci = 1; ci < 3; ++ci) {
        if (comp[ci].h_samp_factor != 1 || comp[ci].v_samp_factor != 1 ||
            dct_scaled_size(comp[ci]) != min_size) {
            return OwnUpsampling::None;
        }
    }
    // libjpeg upsamples chroma rows of 1 or 2 samples by repetition (jdsample.c).
    if (comp[1].downsampled_width <= 2) return OwnUpsampling::None;
    if (comp[0].v_samp_factor == 2) return OwnUpsampling::H2V2;
    return comp[0].v_samp_factor == 1 ? OwnUpsampling::H2V1 : OwnUpsampling::None;
}

// The raw planes of two iMCU rows (4:2:0's output rows need the chroma row above and
// below; 4:2:2 uses one), each chroma row with its edge samples repeated outside it.
struct RawPlanes {
    JSAMPARRAY luma, cb, cr;
    int luma_rows;    // per iMCU row: 2 (4:2:0) or 1 (4:2:2) times the IDCT size
    int chroma_rows;  // per iMCU row: the IDCT size
    int chroma_height;

    uint8_t* luma_row(int y) const {
        return luma[(y / luma_rows) % 2 * luma_rows + y % luma_rows];
    }
    // Chroma row j (clamped to the image, as libjpeg's context rows are) of plane p.
    uint8_t* chroma_row(JSAMPARRAY p, int j) const {
        j = std::clamp(j, 0, chroma_height - 1);
        return p[(j / chroma_rows) % 2 * chroma_rows + j % chroma_rows] + kChromaMargin;
    }
    static constexpr int kChromaMargin = 32;  // room for row[-1]
    static constexpr int kMaxRows = 2 * DCTSIZE;  // luma rows per iMCU row, at most
};

void emit_rgb_row(const RawPlanes& planes, bool h2v2, int y, int width, uint8_t* out) {
    const int near = h2v2 ? y / 2 : y;
    const int far = !h2v2 ? near : y % 2 == 0 ? near - 1 : near + 1;
    const YccRow row{planes.luma_row(y), planes.chroma_row(planes.cb, near),
                     planes.chroma_row(planes.cr, near), planes.chroma_row(planes.cb, far),
                     planes.chroma_row(planes.cr, far)};
    ycc_row_to_rgb(row, width, h2v2, out);
}

// Decodes every row as raw YCbCr planes, one iMCU row at a time, and writes them as
// RGB straight into the output. An iMCU row holds max_v_samp_factor times the IDCT
// size of output rows (16 and 8 at full size, fewer when DCT-scaled) and the IDCT
// size of chroma rows. An output row of 4:2:0 waits for the iMCU row below when its
// lower chroma neighbour lies there (the last row of each iMCU row). Runs inside
// decode()'s setjmp; returns false if libjpeg gives no rows.
bool read_raw_rgb(j_decompress_ptr cinfo, bool h2v2, uint8_t* dst, ptrdiff_t row_stride) {
    const int width = int(cinfo->output_width), height = int(cinfo->output_height);
    const int vectors = (width + 31) / 32 * 32;
    const JDIMENSION luma_bytes = JDIMENSION(vectors + ycc_row_slack());
    const JDIMENSION chroma_bytes =
        JDIMENSION(RawPlanes::kChromaMargin + vectors / 2 + ycc_row_slack());
    auto* common = reinterpret_cast<j_common_ptr>(cinfo);
    RawPlanes planes;
    planes.chroma_rows = min_dct_scaled_size(*cinfo);  // own_upsampling: at most DCTSIZE
    planes.luma_rows = cinfo->max_v_samp_factor * planes.chroma_rows;
    planes.chroma_height = int(cinfo->comp_info[1].downsampled_height);
    const int chroma_rows = planes.chroma_rows;
    planes.luma =
        (*cinfo->mem->alloc_sarray)(common, JPOOL_IMAGE, luma_bytes, 2 * planes.luma_rows);
    planes.cb = (*cinfo->mem->alloc_sarray)(common, JPOOL_IMAGE, chroma_bytes, 2 * chroma_rows);
    planes.cr = (*cinfo->mem->alloc_sarray)(common, JPOOL_IMAGE, chroma_bytes, 2 * chroma_rows);
    JSAMPROW luma_rows[RawPlanes::kMaxRows], cb_rows[DCTSIZE], cr_rows[DCTSIZE];
    JSAMPARRAY raw[3] = {luma_rows, cb_rows, cr_rows};
    const int cw = int(cinfo->comp_info[1].downsampled_width);
    for (int k = 0; cinfo->output_scanline < cinfo->output_height; ++k) {
        const int top = k * planes.luma_rows, set = k % 2;
        for (int i = 0; i < planes.luma_rows; ++i) {
            luma_rows[i] = planes.luma[set * planes.luma_rows + i];
        }
        for (int i = 0; i < chroma_rows; ++i) {
            cb_rows[i] = planes.cb[set * chroma_rows + i] + RawPlanes::kChromaMargin;
            cr_rows[i] = planes.cr[set * chroma_rows + i] + RawPlanes::kChromaMargin;
        }
        if (jpeg_read_raw_data(cinfo, raw, JDIMENSION(planes.luma_rows)) == 0) return false;
        for (int i = 0; i < chroma_rows; ++i) {  // the edge samples libjpeg's upsampling repeats
            cb_rows[i][-1] = cb_rows[i][0], cb_rows[i][cw] = cb_rows[i][cw - 1];
            cr_rows[i][-1] = cr_rows[i][0], cr_rows[i][cw] = cr_rows[i][cw - 1];
        }
        const bool last = top + planes.luma_rows >= height;
        int first = top, end = std::min(height, top + planes.luma_rows);
        if (h2v2) {
            if (k > 0) first = top - 1;                   // the previous iMCU row's last
            if (!last) end = top + planes.luma_rows - 1;  // this one's last waits
        }
        for (int y = first; y < end; ++y) {
            emit_rgb_row(planes, h2v2, y, width, dst + ptrdiff_t(y) * row_stride);
        }
    }
    return true;
}

}  // namespace

JpegDecoder::JpegDecoder(const uint8_t* data, size_t size, Diagnostics* diag)
    : data_(data), size_(size), diag_(diag) {
    std::memset(&cinfo_, 0, sizeof(cinfo_));
    cinfo_.err = jpeg_std_error(&err_.pub);
    err_.pub.error_exit = on_error_exit;
    err_.pub.emit_message = on_message;
    err_.diag = diag;
    jpeg_create_decompress(&cinfo_);
    progress_.progress_monitor = on_progress;
    cinfo_.progress = &progress_;
}

JpegDecoder::~JpegDecoder() { jpeg_destroy_decompress(&cinfo_); }

bool JpegDecoder::read_header(ImageHeader* header) {
    if (size_ == 0) return diag_->fail(ErrorKind::Corrupt, "empty input");
    if (size_ < 3 || data_[0] != 0xFF || data_[1] != 0xD8 || data_[2] != 0xFF) {
        return diag_->fail(ErrorKind::Corrupt, "not a JPEG (no SOI marker)");
    }
    if (setjmp(err_.jump)) return false;
    if (!header_read_) {
        jpeg_mem_src(&cinfo_, data_, static_cast<unsigned long>(size_));
        jpeg_save_markers(&cinfo_, kExifMarker, 0xFFFF);
        jpeg_read_header(&cinfo_, TRUE);
        header_read_ = true;
    }
    J_COLOR_SPACE cs = cinfo_.jpeg_color_space;
    if (cs == JCS_UNKNOWN || cinfo_.num_components == 2 || cinfo_.num_components > 4) {
        return diag_->fail(ErrorKind::Unsupported,
                           "JPEG with " + std::to_string(cinfo_.num_components) +
                               " components of an unknown color space");
    }
    header->format = "jpeg";
    header->color_space = color_space_name(cs);
    header->height = static_cast<int>(cinfo_.image_height);
    header->width = static_cast<int>(cinfo_.image_width);
    header->channels = unchanged_channels(cs);
    header->bit_depth = cinfo_.data_precision;
    header->orientation = find_orientation(&cinfo_);
    header->lossless = is_lossless(cinfo_);
    header->progressive = jpeg_has_multiple_scans(&cinfo_) && !header->lossless;
    return true;
}

bool JpegDecoder::prepare(ReadMode mode, int scale_num, const Roi* roi, int64_t max_pixels,
                          OutputShape* shape) {
    ImageHeader header;
    if (!read_header(&header)) return false;
    precision_ = cinfo_.data_precision;
    lossless_ = header.lossless;
    const bool wide = lossless_ || precision_ != 8;
#if !TRIVIUM_JPEG_WIDE
    if (wide) {
        return diag_->fail(ErrorKind::Unsupported,
                           std::to_string(precision_) +
                               "-bit JPEG (this build's libjpeg decodes 8-bit JPEG only)");
    }
#endif
    if (lossless_ && scale_num != 8) {
        return diag_->fail(ErrorKind::Unsupported,
                           "scale does not apply to lossless JPEG (it has no DCT to scale); "
                           "decode it at full size");
    }
    const int64_t pixels = int64_t(cinfo_.image_width) * int64_t(cinfo_.image_height);
    if (max_pixels > 0 && pixels > max_pixels) {
        return diag_->fail(ErrorKind::TooLarge,
                           std::to_string(cinfo_.image_width) + "x" +
                               std::to_string(cinfo_.image_height) + " image exceeds the limit of " +
                               std::to_string(max_pixels) + " pixels");
    }
    if (setjmp(err_.jump)) return false;

    const J_COLOR_SPACE cs = cinfo_.jpeg_color_space;
    const int channels = mode_channels(mode, cs);
    if (wide) {
        if (!choose_wide_output(channels)) return false;
    } else if (is_cmyk(cs)) {
        cinfo_.out_color_space = JCS_CMYK;
        decoded_channels_ = 4;
        conversion_ = channels == 1   ? RowConversion::CmykToGray
                      : channels == 2 ? RowConversion::CmykToGrayAlpha
                      : channels == 3 ? RowConversion::CmykToRgb
                                      : RowConversion::CmykToRgba;
    } else if (channels <= 2) {
        cinfo_.out_color_space = JCS_GRAYSCALE;
        decoded_channels_ = 1;
        conversion_ = channels == 2 ? RowConversion::GrayToGrayAlpha : RowConversion::None;
    } else {
        cinfo_.out_color_space = channels == 3 ? JCS_EXT_RGB : JCS_EXT_RGBA;
        decoded_channels_ = channels;
        conversion_ = RowConversion::None;
    }
    cinfo_.dct_method = JDCT_ISLOW;  // what Pillow and torchvision use
    cinfo_.scale_num = static_cast<unsigned int>(scale_num);
    cinfo_.scale_denom = 8;
    jpeg_calc_output_dimensions(&cinfo_);

    const int64_t out_w = cinfo_.output_width, out_h = cinfo_.output_height;
    if (roi == nullptr) {
        region_top_ = region_left_ = 0;
        region_width_ = static_cast<JDIMENSION>(out_w);
        region_height_ = static_cast<JDIMENSION>(out_h);
    } else {
        const int64_t W = cinfo_.image_width, H = cinfo_.image_height;
        // Compared as top > H - height (not top + height > H): a huge height must not
        // overflow into a box that passes.
        if (roi->top < 0 || roi->left < 0 || roi->height <= 0 || roi->width <= 0 ||
            roi->top > H - roi->height || roi->left > W - roi->width) {
            return diag_->fail(ErrorKind::BadArgument, "roi (top=" + std::to_string(roi->top) +
                                                       ", left=" + std::to_string(roi->left) +
                                                       ", height=" + std::to_string(roi->height) +
                                                       ", width=" + std::to_string(roi->width) +
                                                       ") is outside the " + std::to_string(W) +
                                                       "x" + std::to_string(H) + " image");
        }
        // Map the source box to the scaled image: floor the start, ceil the end.
        const int64_t top = roi->top * scale_num / 8, left = roi->left * scale_num / 8;
        const int64_t bottom = std::min(out_h, ((roi->top + roi->height) * scale_num + 7) / 8);
        const int64_t right = std::min(out_w, ((roi->left + roi->width) * scale_num + 7) / 8);
        region_top_ = static_cast<JDIMENSION>(top);
        region_left_ = static_cast<JDIMENSION>(left);
        region_height_ = static_cast<JDIMENSION>(std::max<int64_t>(1, bottom - top));
        region_width_ = static_cast<JDIMENSION>(std::max<int64_t>(1, right - left));
    }
    shape_.height = static_cast<int>(region_height_);
    shape_.width = static_cast<int>(region_width_);
    shape_.channels = channels;
    shape_.bytes_per_sample = precision_ > 8 ? 2 : 1;
    *shape = shape_;
    return true;
}

void JpegDecoder::convert_row(const uint8_t* src, uint8_t* dst, int width) const {
    switch (conversion_) {
        case RowConversion::None:
            std::memcpy(dst, src, size_t(width) * decoded_channels_);
            break;
        case RowConversion::GrayToGrayAlpha:
            for (int x = 0; x < width; ++x) {
                dst[2 * x] = src[x];
                dst[2 * x + 1] = 255;
            }
            break;
        default: {
            const int out_c = shape_.channels;
            for (int x = 0; x < width; ++x, src += 4, dst += out_c) {
                const uint8_t r = cmyk_channel(src[0], src[3]);
                const uint8_t g = cmyk_channel(src[1], src[3]);
                const uint8_t b = cmyk_channel(src[2], src[3]);
                if (out_c >= 3) {
                    dst[0] = r, dst[1] = g, dst[2] = b;
                    if (out_c == 4) dst[3] = 255;
                } else {
                    dst[0] = static_cast<uint8_t>(luma(r, g, b));
                    if (out_c == 2) dst[1] = 255;
                }
            }
        }
    }
}

// Reads the region's rows straight into the output, as many per call as libjpeg
// takes. Runs inside decode()'s setjmp.
bool JpegDecoder::read_rows_in_place(uint8_t* dst, ptrdiff_t row_stride) {
    JSAMPARRAY rows = static_cast<JSAMPARRAY>((*cinfo_.mem->alloc_small)(
        reinterpret_cast<j_common_ptr>(&cinfo_), JPOOL_IMAGE, sizeof(JSAMPROW) * region_height_));
    for (JDIMENSION y = 0; y < region_height_; ++y) rows[y] = dst + ptrdiff_t(y) * row_stride;
    for (JDIMENSION done = 0; done < region_height_;) {
        const JDIMENSION n = jpeg_read_scanlines(&cinfo_, rows + done, region_height_ - done);
        if (n == 0) return diag_->fail(ErrorKind::Corrupt, "decoder returned no scanline");
        done += n;
    }
    return true;
}

// Ends a decode: finish when every row was read, else abort (a region ends early).
// A region that met damage first decodes on to the end (the rows below it skipped,
// then the last row read: libjpeg skips to the end without decoding), so that a
// damaged file gets the verdict a full decode gives it: one whose later data is
// beyond repair raises whatever its region held.
void JpegDecoder::finish_decode() {
    const JDIMENSION below = cinfo_.output_height - cinfo_.output_scanline;
    if (diag_->corrupt && below > 0 && !lossless_) {  // lossless decodes cannot skip
        // Room for a row of 8- or 12-bit samples, from libjpeg's pool.
        auto* last = static_cast<JSAMPROW>((*cinfo_.mem->alloc_small)(
            reinterpret_cast<j_common_ptr>(&cinfo_), JPOOL_IMAGE,
            size_t(cinfo_.output_width) * cinfo_.output_components * 2));
#if TRIVIUM_JPEG_WIDE
        if (precision_ > 8) {
            auto* wide = reinterpret_cast<J12SAMPROW>(last);
            if (below > 1) jpeg12_skip_scanlines(&cinfo_, below - 1);
            jpeg12_read_scanlines(&cinfo_, &wide, 1);
        } else
#endif
        {
            if (below > 1) jpeg_skip_scanlines(&cinfo_, below - 1);
            jpeg_read_scanlines(&cinfo_, &last, 1);
        }
    }
    if (cinfo_.output_scanline == cinfo_.output_height) {
        jpeg_finish_decompress(&cinfo_);
    } else {
        jpeg_abort_decompress(&cinfo_);
    }
}

bool JpegDecoder::decode(uint8_t* dst, ptrdiff_t row_stride, bool strict) {
    err_.strict = strict;
    if (setjmp(err_.jump)) return false;
#if TRIVIUM_JPEG_WIDE
    if (lossless_ || precision_ != 8) {
        if (precision_ <= 8) return decode_wide<JSAMPLE, uint8_t>(dst, row_stride);
        if (precision_ <= 12) return decode_wide<J12SAMPLE, uint16_t>(dst, row_stride);
        return decode_wide<J16SAMPLE, uint16_t>(dst, row_stride);
    }
#endif
    const bool full = region_top_ == 0 && region_left_ == 0 &&
                      region_width_ == cinfo_.output_width &&
                      region_height_ == cinfo_.output_height;
    const OwnUpsampling own = full && conversion_ == RowConversion::None && shape_.channels == 3
                                  ? own_upsampling(cinfo_)
                                  : OwnUpsampling::None;
    cinfo_.raw_data_out = own != OwnUpsampling::None ? TRUE : FALSE;
    jpeg_start_decompress(&cinfo_);
    started_ = true;
    if (own != OwnUpsampling::None) {
        if (!read_raw_rgb(&cinfo_, own == OwnUpsampling::H2V2, dst, row_stride)) {
            return diag_->fail(ErrorKind::Corrupt, "decoder returned no scanline");
        }
        jpeg_finish_decompress(&cinfo_);
        return true;
    }

    // Crop one column wider on each side than asked: libjpeg upsamples the chroma of
    // a crop's edge columns as if they were the image's edge, so they may differ
    // from a full decode. jpeg_crop_scanline then widens the crop to iMCU boundaries.
    JDIMENSION crop_left = region_left_ > 0 ? region_left_ - 1 : 0;
    JDIMENSION crop_width =
        std::min(cinfo_.output_width, region_left_ + region_width_ + 1) - crop_left;
    if (crop_left != 0 || crop_width != cinfo_.output_width) {
        jpeg_crop_scanline(&cinfo_, &crop_left, &crop_width);
    }
    const JDIMENSION skip_cols = region_left_ - crop_left;
    // libjpeg writes whole crop rows: skip_cols columns before the region, a few
    // after. Without a conversion each row is decoded straight into its place in the
    // output, then moved left over the skipped columns; what spills past the row's
    // end lands in the next row, which is written after it. Rows whose spill would
    // pass the end of the output go through a scratch row (decoding every row into
    // one reused scratch row and copying it out makes the decode ~25% slower).
    const size_t crop_bytes = size_t(crop_width) * decoded_channels_;
    const size_t skip_bytes = size_t(skip_cols) * decoded_channels_;
    const size_t row_bytes = size_t(region_width_) * shape_.channels;
    const uint8_t* const end = dst + ptrdiff_t(region_height_ - 1) * row_stride + row_bytes;
    const bool in_place = conversion_ == RowConversion::None;
    if (region_top_ > 0) jpeg_skip_scanlines(&cinfo_, region_top_);
    if (in_place && crop_bytes == row_bytes) {
        // Whole rows, as laid out in the output: hand libjpeg every row pointer at
        // once (as TurboJPEG does), so that it converts whole row groups per call.
        if (!read_rows_in_place(dst, row_stride)) return false;
        finish_decode();
        return true;
    }
    // A scratch row from libjpeg's pool: freed by jpeg_destroy even after a longjmp.
    JSAMPARRAY scratch = (*cinfo_.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo_),
                                                     JPOOL_IMAGE, crop_width * decoded_channels_, 1);

    for (JDIMENSION y = 0; y < region_height_; ++y) {
        uint8_t* out_row = dst + ptrdiff_t(y) * row_stride;
        const bool into_output = in_place && out_row + crop_bytes <= end;
        JSAMPROW row = into_output ? out_row : scratch[0];
        if (jpeg_read_scanlines(&cinfo_, &row, 1) != 1) {
            return diag_->fail(ErrorKind::Corrupt, "decoder returned no scanline");
        }
        if (!into_output) {
            convert_row(row + skip_bytes, out_row, static_cast<int>(region_width_));
        } else if (skip_bytes != 0) {
            std::memmove(out_row, row + skip_bytes, row_bytes);
        }
    }
    finish_decode();
    return true;
}

// The colour space libjpeg decodes a 12-bit or lossless JPEG to. The lossless
// process has no colour conversion in libjpeg: gray and RGB are decoded as stored
// and converted to `channels` in decode_wide.
bool JpegDecoder::choose_wide_output(int channels) {
    const J_COLOR_SPACE cs = cinfo_.jpeg_color_space;
    if (lossless_) {
        if (cs != JCS_GRAYSCALE && cs != JCS_RGB) {
            return diag_->fail(ErrorKind::Unsupported,
                               std::string("lossless JPEG in ") + color_space_name(cs) +
                                   " (colour conversion does not apply to lossless JPEG; "
                                   "gray and RGB are supported)");
        }
        cinfo_.out_color_space = cs;
        decoded_channels_ = cs == JCS_GRAYSCALE ? 1 : 3;
    } else if (is_cmyk(cs)) {
        return diag_->fail(ErrorKind::Unsupported, std::to_string(precision_) + "-bit " +
                                                       color_space_name(cs) + " JPEG");
    } else {
        cinfo_.out_color_space = channels <= 2 ? JCS_GRAYSCALE : JCS_EXT_RGB;
        decoded_channels_ = channels <= 2 ? 1 : 3;
    }
    conversion_ = RowConversion::None;  // decode_wide converts every row itself
    return true;
}

#if TRIVIUM_JPEG_WIDE
template <typename Sample, typename Out>
bool JpegDecoder::decode_wide(uint8_t* dst, ptrdiff_t row_stride) {
    jpeg_start_decompress(&cinfo_);
    started_ = true;
    j_common_ptr common = reinterpret_cast<j_common_ptr>(&cinfo_);

    // As in decode(): crop one column wider on each side than asked (lossy only;
    // a lossless decode reads whole rows and copies the region out).
    JDIMENSION crop_left = 0, crop_width = cinfo_.output_width;
    if (!lossless_) {
        crop_left = region_left_ > 0 ? region_left_ - 1 : 0;
        crop_width = std::min(cinfo_.output_width, region_left_ + region_width_ + 1) - crop_left;
        if (crop_left != 0 || crop_width != cinfo_.output_width) {
            crop_row(&cinfo_, &crop_left, &crop_width, static_cast<Sample*>(nullptr));
        }
    }
    const int in_c = decoded_channels_, out_c = shape_.channels;
    const size_t skip = size_t(region_left_ - crop_left) * in_c;
    JSAMPARRAY scratch = (*cinfo_.mem->alloc_sarray)(
        common, JPOOL_IMAGE, JDIMENSION(crop_width * in_c * sizeof(Sample)), 1);
    Sample* row = reinterpret_cast<Sample*>(scratch[0]);

    // Stored samples (0 .. 2^precision - 1; clamped, since damaged lossless data
    // can overflow) to the output range by bit replication: v << (bits - precision)
    // with the top bits repeated below, so that x >> (bits - precision) gives v back.
    const int max_in = (1 << precision_) - 1;
    constexpr int kOutBits = 8 * sizeof(Out);
    Out* lut = static_cast<Out*>(
        (*cinfo_.mem->alloc_large)(common, JPOOL_IMAGE, sizeof(Out) * size_t(max_in + 1)));
    for (int v = 0; v <= max_in; ++v) {
        uint32_t r = uint32_t(v) << (kOutBits - precision_);
        for (int filled = precision_; filled < kOutBits; filled *= 2) r |= r >> filled;
        lut[v] = static_cast<Out>(r);
    }
    const auto sample = [&](Sample s) { return lut[std::clamp(int(s), 0, max_in)]; };
    constexpr Out kOpaque = static_cast<Out>(~Out(0));

    if (lossless_) {
        for (JDIMENSION y = 0; y < region_top_; ++y) {
            if (read_row(&cinfo_, row) != 1) {
                return diag_->fail(ErrorKind::Corrupt, "decoder returned no scanline");
            }
        }
    } else if (region_top_ > 0) {
        skip_rows(&cinfo_, region_top_, static_cast<Sample*>(nullptr));
    }
    for (JDIMENSION y = 0; y < region_height_; ++y) {
        if (read_row(&cinfo_, row) != 1) {
            return diag_->fail(ErrorKind::Corrupt, "decoder returned no scanline");
        }
        const Sample* src = row + skip;
        Out* out = reinterpret_cast<Out*>(dst + ptrdiff_t(y) * row_stride);
        for (JDIMENSION x = 0; x < region_width_; ++x, src += in_c, out += out_c) {
            if (in_c == 1) {
                const Out g = sample(src[0]);
                out[0] = g;
                if (out_c == 2) out[1] = kOpaque;
                if (out_c >= 3) out[1] = g, out[2] = g;
                if (out_c == 4) out[3] = kOpaque;
            } else {
                const Out r = sample(src[0]), g = sample(src[1]), b = sample(src[2]);
                if (out_c >= 3) {
                    out[0] = r, out[1] = g, out[2] = b;
                    if (out_c == 4) out[3] = kOpaque;
                } else {
                    out[0] = static_cast<Out>(luma(r, g, b));
                    if (out_c == 2) out[1] = kOpaque;
                }
            }
        }
    }
    finish_decode();
    return true;
}
#endif

namespace {

// The encoder's destination: one malloc'd buffer, sized from a guess and grown with
// realloc (often in place), where jpeg_mem_dest starts at 4 KiB and copies the
// whole output on every doubling.
struct GrowingDest {
    jpeg_destination_mgr pub;
    uint8_t* data = nullptr;
    size_t capacity = 0;

    size_t used() const { return capacity - pub.free_in_buffer; }
};

void dest_init(j_compress_ptr) {}

boolean dest_grow(j_compress_ptr cinfo) {
    auto* dest = reinterpret_cast<GrowingDest*>(cinfo->dest);
    const size_t used = dest->capacity;  // called when the buffer is full
    void* grown = std::realloc(dest->data, used * 2);
    if (grown == nullptr) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 10);
    dest->data = static_cast<uint8_t*>(grown);
    dest->capacity = used * 2;
    dest->pub.next_output_byte = dest->data + used;
    dest->pub.free_in_buffer = dest->capacity - used;
    return TRUE;
}

void dest_term(j_compress_ptr) {}

struct EncoderState {
    jpeg_compress_struct cinfo;
    JpegDecoder::ErrorManager err;
    GrowingDest dest;

    ~EncoderState() { std::free(dest.data); }
};

// Starts the destination at about the size a JPEG of these samples takes at the
// usual qualities (an 8th of the raw size), so most encodes never grow it.
bool start_dest(EncoderState* s, size_t raw_bytes) {
    GrowingDest& dest = s->dest;
    dest.capacity = std::max<size_t>(size_t(1) << 14, raw_bytes / 8);
    dest.data = static_cast<uint8_t*>(std::malloc(dest.capacity));
    if (dest.data == nullptr) return false;
    dest.pub.init_destination = dest_init;
    dest.pub.empty_output_buffer = dest_grow;
    dest.pub.term_destination = dest_term;
    dest.pub.next_output_byte = dest.data;
    dest.pub.free_in_buffer = dest.capacity;
    s->cinfo.dest = &dest.pub;
    return true;
}

bool set_subsampling(jpeg_compress_struct* cinfo, int subsampling, Diagnostics* diag) {
    int h = 2, v = 2;
    switch (subsampling) {
        case 444: h = 1, v = 1; break;
        case 422: h = 2, v = 1; break;
        case 420: h = 2, v = 2; break;
        case 440: h = 1, v = 2; break;
        default:
            return diag->fail(ErrorKind::Corrupt,
                              "subsampling must be 444, 422, 420 or 440, got " +
                                  std::to_string(subsampling));
    }
    cinfo->comp_info[0].h_samp_factor = h;
    cinfo->comp_info[0].v_samp_factor = v;
    for (int c = 1; c < cinfo->num_components; ++c) {
        cinfo->comp_info[c].h_samp_factor = 1;
        cinfo->comp_info[c].v_samp_factor = 1;
    }
    return true;
}

// Whether the encode converts RGB to YCbCr itself (jpeg_color.h) and hands libjpeg
// raw planes: 8-bit RGB at 4:2:0, 4:2:2 or 4:4:4 on AVX2 CPUs (elsewhere, and at 4:4:0,
// libjpeg converts with its own SIMD code).
bool uses_own_ycc(const RgbImage& image, const JpegEncodeOptions& options) {
    const int sub = options.subsampling;
    return image.g != nullptr && options.precision == 8 &&
           (sub == 420 || sub == 422 || sub == 444) && ycc_vectorised();
}

// Writes the image as raw YCbCr at 4:4:4 (h_factor 1) or 4:2:2 (h_factor 2), one iMCU
// row (8 image rows) per call; rows below the image repeat the last one.
void write_ycc_rows(jpeg_compress_struct* cinfo, const RgbImage& image, int h_factor) {
    const JDIMENSION luma_width = JDIMENSION(ycc_padded_width(image.width));
    auto* common = reinterpret_cast<j_common_ptr>(cinfo);
    JSAMPARRAY luma = (*cinfo->mem->alloc_sarray)(common, JPOOL_IMAGE, luma_width, 8);
    JSAMPARRAY cb = (*cinfo->mem->alloc_sarray)(common, JPOOL_IMAGE, luma_width / h_factor, 8);
    JSAMPARRAY cr = (*cinfo->mem->alloc_sarray)(common, JPOOL_IMAGE, luma_width / h_factor, 8);
    JSAMPROW luma_rows[8], cb_rows[8], cr_rows[8];
    JSAMPARRAY planes[3] = {luma_rows, cb_rows, cr_rows};
    const int height = image.height;
    for (int top = 0; top < height; top += 8) {
        for (int i = 0; i < 8; ++i) {
            const int row = top + i;
            if (row < height) {
                rgb_row_to_ycc(image, row, h_factor, luma[i], cb[i], cr[i]);
                luma_rows[i] = luma[i], cb_rows[i] = cb[i], cr_rows[i] = cr[i];
            } else {
                luma_rows[i] = luma_rows[i - 1], cb_rows[i] = cb_rows[i - 1];
                cr_rows[i] = cr_rows[i - 1];
            }
        }
        jpeg_write_raw_data(cinfo, planes, 8);
    }
}

// Writes the image as raw YCbCr, one iMCU row (16 image rows) per call. Rows below
// the image repeat the last luma row and the last chroma row, as libjpeg pads them
// (jcprepct.c: the bottom row before downsampling, then the last downsampled row).
void write_ycc420(jpeg_compress_struct* cinfo, const RgbImage& image) {
    const JDIMENSION luma_width = JDIMENSION(ycc_padded_width(image.width));
    auto* common = reinterpret_cast<j_common_ptr>(cinfo);
    JSAMPARRAY luma = (*cinfo->mem->alloc_sarray)(common, JPOOL_IMAGE, luma_width, 16);
    JSAMPARRAY cb = (*cinfo->mem->alloc_sarray)(common, JPOOL_IMAGE, luma_width / 2, 8);
    JSAMPARRAY cr = (*cinfo->mem->alloc_sarray)(common, JPOOL_IMAGE, luma_width / 2, 8);
    JSAMPROW luma_rows[16], cb_rows[8], cr_rows[8];
    JSAMPARRAY planes[3] = {luma_rows, cb_rows, cr_rows};
    const int height = image.height;
    for (int top = 0; top < height; top += 16) {
        for (int i = 0; i < 8; ++i) {
            const int row = top + 2 * i;
            if (row < height) {
                rgb_rows_to_ycc420(image, row, std::min(row + 1, height - 1), luma[2 * i],
                                   luma[2 * i + 1], cb[i], cr[i]);
                luma_rows[2 * i] = luma[2 * i];
                luma_rows[2 * i + 1] = luma[2 * i + 1];
                cb_rows[i] = cb[i];
                cr_rows[i] = cr[i];
            } else {
                luma_rows[2 * i] = luma_rows[2 * i + 1] = luma_rows[height - 1 - top];
                cb_rows[i] = cb_rows[i - 1];
                cr_rows[i] = cr_rows[i - 1];
            }
        }
        jpeg_write_raw_data(cinfo, planes, 16);
    }
}

// The libjpeg calls of an encode, isolated so that a longjmp skips no destructor.
// `image` describes the samples for the write_ycc* paths (its g is null unless 8-bit
// RGB); `pixels` and `row_stride` give them to libjpeg's own conversion.
bool run_encoder(EncoderState* s, const RgbImage& image, const uint8_t* pixels, int channels,
                 ptrdiff_t row_stride, const JpegEncodeOptions& options, Diagnostics* diag) {
    const int height = image.height, width = image.width;
    if (setjmp(s->err.jump)) return false;
    jpeg_create_compress(&s->cinfo);
    if (!start_dest(s, size_t(height) * size_t(width) * size_t(channels))) {
        return diag->fail(ErrorKind::TooLarge, "out of memory");
    }
    s->cinfo.image_width = static_cast<JDIMENSION>(width);
    s->cinfo.image_height = static_cast<JDIMENSION>(height);
    s->cinfo.input_components = channels;
    s->cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_EXT_RGB;
    s->cinfo.data_precision = options.precision;  // before jpeg_set_defaults, which reads it
    jpeg_set_defaults(&s->cinfo);
    jpeg_set_quality(&s->cinfo, options.quality, TRUE);
    s->cinfo.dct_method = JDCT_ISLOW;
    // The default Huffman tables are 8-bit only: 12-bit always computes its own.
    s->cinfo.optimize_coding = options.optimize || options.precision == 12 ? TRUE : FALSE;
    if (channels == 3 && !set_subsampling(&s->cinfo, options.subsampling, diag)) return false;
    if (options.progressive) jpeg_simple_progression(&s->cinfo);
    const bool raw_ycc = uses_own_ycc(image, options);
    s->cinfo.raw_data_in = raw_ycc ? TRUE : FALSE;
    jpeg_start_compress(&s->cinfo, TRUE);
#if TRIVIUM_JPEG_WIDE
    if (options.precision == 12) {
        const size_t samples = size_t(width) * channels;
        J12SAMPROW row = reinterpret_cast<J12SAMPROW>((*s->cinfo.mem->alloc_small)(
            reinterpret_cast<j_common_ptr>(&s->cinfo), JPOOL_IMAGE, samples * sizeof(J12SAMPLE)));
        while (s->cinfo.next_scanline < s->cinfo.image_height) {
            const auto* src = reinterpret_cast<const uint16_t*>(
                pixels + ptrdiff_t(s->cinfo.next_scanline) * row_stride);
            for (size_t i = 0; i < samples; ++i) row[i] = static_cast<J12SAMPLE>(src[i] >> 4);
            jpeg12_write_scanlines(&s->cinfo, &row, 1);
        }
        jpeg_finish_compress(&s->cinfo);
        return true;
    }
#endif
    if (raw_ycc) {
        if (options.subsampling == 420) {
            write_ycc420(&s->cinfo, image);
        } else {
            write_ycc_rows(&s->cinfo, image, options.subsampling == 422 ? 2 : 1);
        }
        jpeg_finish_compress(&s->cinfo);
        return true;
    }
    if (image.planar) {  // libjpeg converts: hand it each row interleaved
        JSAMPROW row = static_cast<JSAMPROW>((*s->cinfo.mem->alloc_small)(
            reinterpret_cast<j_common_ptr>(&s->cinfo), JPOOL_IMAGE, size_t(width) * 3));
        while (s->cinfo.next_scanline < s->cinfo.image_height) {
            interleave_rgb_row(image, int(s->cinfo.next_scanline), row);
            jpeg_write_scanlines(&s->cinfo, &row, 1);
        }
        jpeg_finish_compress(&s->cinfo);
        return true;
    }
    // Every row pointer at once: libjpeg converts and downsamples whole row groups
    // per call.
    JSAMPARRAY rows = static_cast<JSAMPARRAY>((*s->cinfo.mem->alloc_large)(
        reinterpret_cast<j_common_ptr>(&s->cinfo), JPOOL_IMAGE, sizeof(JSAMPROW) * size_t(height)));
    for (int y = 0; y < height; ++y) rows[y] = const_cast<JSAMPROW>(pixels + ptrdiff_t(y) * row_stride);
    while (s->cinfo.next_scanline < s->cinfo.image_height) {
        const JDIMENSION next = s->cinfo.next_scanline;
        jpeg_write_scanlines(&s->cinfo, rows + next, s->cinfo.image_height - next);
    }
    jpeg_finish_compress(&s->cinfo);
    return true;
}

// The argument checks of both entry points.
bool check_encode(int height, int width, int channels, const JpegEncodeOptions& options,
                  Diagnostics* diag) {
    if (options.precision != 8 && (options.precision != 12 || !TRIVIUM_JPEG_WIDE)) {
        return diag->fail(ErrorKind::Corrupt,
                          std::to_string(options.precision) + "-bit JPEG encode is not supported" +
                              (TRIVIUM_JPEG_WIDE ? " (8 or 12)" : " by this build (8-bit only)"));
    }
    if (channels != 1 && channels != 3) {
        return diag->fail(ErrorKind::Corrupt,
                          "JPEG needs 1 or 3 channels, got " + std::to_string(channels));
    }
    if (height <= 0 || width <= 0 || height > JPEG_MAX_DIMENSION || width > JPEG_MAX_DIMENSION) {
        return diag->fail(ErrorKind::Corrupt, "JPEG dimensions must be in 1.." +
                                                  std::to_string(JPEG_MAX_DIMENSION) + ", got " +
                                                  std::to_string(width) + "x" +
                                                  std::to_string(height));
    }
    if (options.quality < 1 || options.quality > 100) {
        return diag->fail(ErrorKind::Corrupt,
                          "quality must be in 1..100, got " + std::to_string(options.quality));
    }
    // Checked for gray images too, where it would not apply: a bad value is a bug.
    const int sub = options.subsampling;
    if (sub != 444 && sub != 422 && sub != 420 && sub != 440) {
        return diag->fail(ErrorKind::Corrupt,
                          "subsampling must be 444, 422, 420 or 440, got " + std::to_string(sub));
    }
    return true;
}

bool encode(const RgbImage& image, const uint8_t* pixels, int channels, ptrdiff_t row_stride,
            const JpegEncodeOptions& options, uint8_t** data, size_t* size, Diagnostics* diag) {
    EncoderState state;
    std::memset(&state.cinfo, 0, sizeof(state.cinfo));
    state.cinfo.err = jpeg_std_error(&state.err.pub);
    state.err.pub.error_exit = on_error_exit;
    state.err.pub.emit_message = on_message;
    state.err.diag = diag;
    const bool ok = run_encoder(&state, image, pixels, channels, row_stride, options, diag);
    if (ok) {  // the caller takes the buffer; otherwise it is freed with the state
        *size = state.dest.used();
        *data = std::exchange(state.dest.data, nullptr);
    }
    jpeg_destroy_compress(&state.cinfo);
    return ok;
}

}  // namespace

bool encode_jpeg(const void* pixels, int height, int width, int channels,
                 ptrdiff_t row_stride, const JpegEncodeOptions& options, uint8_t** data,
                 size_t* size, Diagnostics* diag) {
    if (!check_encode(height, width, channels, options, diag)) return false;
    const auto* p = static_cast<const uint8_t*>(pixels);
    const bool rgb8 = channels == 3 && options.precision == 8;
    const RgbImage image{p, rgb8 ? p + 1 : nullptr, p + 2, row_stride, height, width, false};
    return encode(image, p, channels, row_stride, options, data, size, diag);
}

bool encode_jpeg_planes(const uint8_t* planes, int height, int width,
                        const JpegEncodeOptions& options, uint8_t** data, size_t* size,
                        Diagnostics* diag) {
    if (options.precision != 8) {
        return diag->fail(ErrorKind::Corrupt, "planar RGB encodes at 8 bits only");
    }
    if (!check_encode(height, width, 3, options, diag)) return false;
    const ptrdiff_t plane = ptrdiff_t(height) * width;
    const RgbImage image{planes, planes + plane, planes + 2 * plane, width, height, width, true};
    return encode(image, nullptr, 3, 0, options, data, size, diag);
}

}  // namespace trivium
