//! `image_decoder(encoded_stream)` (ONNX ImageDecoder): decodes a 1-D u8
//! tensor holding one encoded image (BMP, JPEG, PNG, PNM, TIFF or WebP,
//! told apart by their leading bytes) into u8 `[H, W, 3]`, or `[H, W, 1]`
//! with attr `pixel_format` `Grayscale`. H and W are decided when the op
//! runs.
//!
//! What ONNX's reference does through Pillow, Vigil does here:
//!
//! - every source becomes 8-bit RGB first, as Pillow's `convert('RGB')`:
//!   gray is copied to the three channels and alpha is dropped (not
//!   composited); palettes are expanded by the decoder;
//! - a 16-bit sample keeps its high byte (`v >> 8`), as Pillow reads 16-bit
//!   RGB and RGBA. Pillow differs on one source: it opens 16-bit grayscale
//!   as mode `I;16` and its conversion to RGB or L clamps at 255 instead;
//! - `BGR` is RGB with the channels reversed;
//! - `Grayscale` is Pillow's `convert('L')` of that RGB, ITU-R 601-2 luma in
//!   16-bit fixed point: `L = (19595 R + 38470 G + 7471 B + 32768) >> 16`
//!   (equal to Pillow's result on all 2^24 colors; a gray source keeps its
//!   values).
//!
//! JPEG is decoded by zune-jpeg and lossy WebP by image-webp, not by
//! libjpeg-turbo and libwebp as in Pillow. zune-jpeg's IDCT and chroma
//! upsampling are not libjpeg-turbo's: some pixels land a step or two from
//! Pillow's (ONNX's JPEG tests: up to 2). image-webp gave libwebp's pixels
//! on every lossy stream tried.
//! JPEG 2000, the other format ONNX's tests use, and every format not
//! listed above are refused with [`Error::Unsupported`] naming the format,
//! as is a feature a decoder lacks (a palette TIFF); a stream that is no
//! image, or a damaged one, with [`Error::Op`]. Samples stored as floats
//! (TIFF) are refused too: Pillow reads them as 0..255 and the decoder as
//! 0..1, so neither reading would match.

use std::io::Cursor;
use std::sync::Arc;

use image::{DynamicImage, ImageError, ImageFormat, ImageReader, Limits};

use crate::dtype::DType;
use crate::error::{attr_err, dtype_err, op_err, rank_err, unsupported_err, Error, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::limit::{alloc_limit, check_alloc, check_shape};
use crate::tensor::Tensor;

const NAME: &str = "image_decoder";

/// The formats decoded, for messages.
const FORMATS: &str = "BMP, JPEG, PNG, PNM, TIFF, WebP";

/// The output's channel order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PixelFormat {
    Rgb,
    Bgr,
    Grayscale,
}

impl PixelFormat {
    /// The ONNX attr value.
    pub fn name(self) -> &'static str {
        match self {
            PixelFormat::Rgb => "RGB",
            PixelFormat::Bgr => "BGR",
            PixelFormat::Grayscale => "Grayscale",
        }
    }

    pub fn parse(s: &str) -> Option<PixelFormat> {
        [PixelFormat::Rgb, PixelFormat::Bgr, PixelFormat::Grayscale]
            .into_iter()
            .find(|p| p.name() == s)
    }

    fn channels(self) -> usize {
        match self {
            PixelFormat::Grayscale => 1,
            _ => 3,
        }
    }
}

/// The `image_decoder` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageDecoder {
    pub pixel_format: PixelFormat,
}

/// Whether `bytes` start like JPEG 2000: the JP2 signature box, or a raw
/// codestream's SOC and SIZ markers.
fn is_jpeg2000(bytes: &[u8]) -> bool {
    const JP2: [u8; 12] = [0, 0, 0, 0x0c, b'j', b'P', b' ', b' ', 0x0d, 0x0a, 0x87, 0x0a];
    const J2K: [u8; 4] = [0xff, 0x4f, 0xff, 0x51];
    bytes.starts_with(&JP2) || bytes.starts_with(&J2K)
}

/// The stream's format, when it is one this op decodes.
fn format_of(bytes: &[u8]) -> Result<ImageFormat> {
    if is_jpeg2000(bytes) {
        return unsupported_err(format!(
            "op '{NAME}': the stream is JPEG 2000, which Vigil does not decode (it decodes {FORMATS})"
        ));
    }
    match image::guess_format(bytes) {
        Ok(f) if f.reading_enabled() => Ok(f),
        Ok(f) => unsupported_err(format!(
            "op '{NAME}': the stream is {}, which Vigil does not decode (it decodes {FORMATS})",
            format_name(f)
        )),
        Err(_) => op_err(format!(
            "op '{NAME}': the {} bytes of encoded_stream do not start like an image of a known format ({FORMATS})",
            bytes.len()
        )),
    }
}

/// `Png` as `PNG`, `WebP` as `WEBP`, `OpenExr` as `OPENEXR`.
fn format_name(f: ImageFormat) -> String {
    format!("{f:?}").to_uppercase()
}

/// A decoder error as the engine's: a damaged stream is [`Error::Op`], a
/// feature of the format the decoder lacks [`Error::Unsupported`].
fn decode_err(f: ImageFormat, e: ImageError) -> Error {
    let what = format!("op '{NAME}': cannot decode the {} stream: {e}", format_name(f));
    match e {
        ImageError::Unsupported(_) => Error::Unsupported(what),
        _ => Error::Op(what),
    }
}

/// Decodes `bytes`, refusing before the pixels are decoded an image whose
/// buffer would pass the allocation limit.
fn decode(bytes: &[u8]) -> Result<DynamicImage> {
    use image::ImageDecoder as _;
    let f = format_of(bytes)?;
    let mut reader = ImageReader::with_format(Cursor::new(bytes), f);
    let mut limits = Limits::default();
    limits.max_alloc = Some(alloc_limit());
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(|e| decode_err(f, e))?;
    check_alloc(
        DType::U8,
        usize::try_from(decoder.total_bytes()).unwrap_or(usize::MAX),
    )?;
    DynamicImage::from_decoder(decoder).map_err(|e| decode_err(f, e))
}

/// A source sample as 8 bits.
trait Sample: Copy {
    fn to_u8(self) -> u8;
}

impl Sample for u8 {
    fn to_u8(self) -> u8 {
        self
    }
}

impl Sample for u16 {
    /// The high byte, as Pillow reads 16-bit RGB.
    fn to_u8(self) -> u8 {
        (self >> 8) as u8
    }
}

/// Interleaved pixels of `channels` samples (gray, gray + alpha, RGB or
/// RGBA) as 8-bit RGB, alpha dropped.
fn to_rgb8<S: Sample>(src: &[S], channels: usize) -> Vec<u8> {
    let mut rgb = Vec::with_capacity(src.len() / channels * 3);
    for px in src.chunks_exact(channels) {
        if channels < 3 {
            let v = px[0].to_u8();
            rgb.extend_from_slice(&[v, v, v]);
        } else {
            rgb.extend_from_slice(&[px[0].to_u8(), px[1].to_u8(), px[2].to_u8()]);
        }
    }
    rgb
}

/// Pillow's RGB to L: ITU-R 601-2 luma in 16-bit fixed point, rounded.
pub fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((19595 * r as u32 + 38470 * g as u32 + 7471 * b as u32 + 0x8000) >> 16) as u8
}

/// The image as `[H, W]` and 8-bit RGB pixels in row order.
fn rgb8_of(img: &DynamicImage) -> Result<((usize, usize), Vec<u8>)> {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let rgb = match img {
        DynamicImage::ImageLuma8(i) => to_rgb8(i.as_raw(), 1),
        DynamicImage::ImageLumaA8(i) => to_rgb8(i.as_raw(), 2),
        DynamicImage::ImageRgb8(i) => i.as_raw().clone(),
        DynamicImage::ImageRgba8(i) => to_rgb8(i.as_raw(), 4),
        DynamicImage::ImageLuma16(i) => to_rgb8(i.as_raw(), 1),
        DynamicImage::ImageLumaA16(i) => to_rgb8(i.as_raw(), 2),
        DynamicImage::ImageRgb16(i) => to_rgb8(i.as_raw(), 3),
        DynamicImage::ImageRgba16(i) => to_rgb8(i.as_raw(), 4),
        other => {
            return unsupported_err(format!(
                "op '{NAME}': the image's samples are {:?}; Vigil decodes 8- and 16-bit integer samples",
                other.color()
            ))
        }
    };
    Ok(((h, w), rgb))
}

/// Writes 8-bit RGB pixels into `out` in `pf`'s channel order.
fn write_pixels(pf: PixelFormat, rgb: &[u8], out: &mut [u8]) {
    match pf {
        PixelFormat::Rgb => out.copy_from_slice(rgb),
        PixelFormat::Bgr => {
            for (o, p) in out.chunks_exact_mut(3).zip(rgb.chunks_exact(3)) {
                o.copy_from_slice(&[p[2], p[1], p[0]]);
            }
        }
        PixelFormat::Grayscale => {
            for (o, p) in out.iter_mut().zip(rgb.chunks_exact(3)) {
                *o = luma(p[0], p[1], p[2]);
            }
        }
    }
}

impl ImageDecoder {
    fn check(&self, x: &TypeInfo) -> Result<()> {
        if x.dtype != DType::U8 {
            return dtype_err(format!("op '{NAME}': encoded_stream must be u8, got {}", x.dtype));
        }
        if x.rank().is_some_and(|r| r != 1) {
            return rank_err(format!(
                "op '{NAME}': encoded_stream must be 1-D, got {}",
                x.shape_string()
            ));
        }
        Ok(())
    }
}

impl Op for ImageDecoder {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check(&inputs[0])?;
        let c = self.pixel_format.channels() as i64;
        Ok(vec![TypeInfo::new(DType::U8, Some(vec![-1, -1, c]))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check(&TypeInfo::of(x))?;
        let bytes = x.read(|v: ndarray::ArrayViewD<'_, u8>| v.iter().copied().collect::<Vec<u8>>())?;
        let img = decode(&bytes)?;
        let ((h, w), rgb) = rgb8_of(&img)?;
        drop(img);
        let shape = [h, w, self.pixel_format.channels()];
        check_shape(&shape)?;
        let out = ctx.output(0, DType::U8, &shape)?;
        out.write_c_order(|o: &mut [u8]| write_pixels(self.pixel_format, &rgb, o))?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("pixel_format", self.pixel_format.name())
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(NAME, &["pixel_format"])?;
        let pixel_format = match a.str("pixel_format")? {
            None => PixelFormat::Rgb,
            Some(s) => match PixelFormat::parse(s) {
                Some(p) => p,
                None => {
                    return attr_err(format!(
                        "op '{NAME}': attr 'pixel_format' must be RGB, BGR or Grayscale, got '{s}'"
                    ))
                }
            },
        };
        Ok(Arc::new(ImageDecoder { pixel_format }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_vec, t};
    use image::{GrayAlphaImage, ImageBuffer, Luma, Rgb, RgbImage, RgbaImage};

    fn decoder(pixel_format: &str) -> Arc<dyn Op> {
        op(NAME, Attrs::new().with("pixel_format", pixel_format))
    }

    fn run(pixel_format: &str, bytes: &[u8]) -> Result<(Vec<usize>, Vec<u8>)> {
        run_vec::<u8>(&*decoder(pixel_format), &[t(&[bytes.len()], bytes.to_vec())])
    }

    fn encode(img: DynamicImage, f: ImageFormat) -> Vec<u8> {
        let mut c = Cursor::new(Vec::new());
        img.write_to(&mut c, f).unwrap();
        c.into_inner()
    }

    /// A w×h RGB pattern, each channel a different function of the
    /// position, so a swapped axis or channel shows.
    fn pattern(w: u32, h: u32) -> RgbImage {
        ImageBuffer::from_fn(w, h, |x, y| {
            Rgb([
                ((x * 37 + y * 11) % 256) as u8,
                ((x * 5 + y * 71 + 13) % 256) as u8,
                ((x * y * 3 + 200) % 256) as u8,
            ])
        })
    }

    /// ITU-R 601-2 luma as Pillow documents it,
    /// `R·299/1000 + G·587/1000 + B·114/1000`, rounded half up in exact
    /// integers; `None` within 1% of a tie, where Pillow's fixed-point
    /// coefficients may round the other way.
    fn luma_by_hand(p: &[u8]) -> Option<u8> {
        let s = 299 * p[0] as u32 + 587 * p[1] as u32 + 114 * p[2] as u32;
        (s % 1000)
            .abs_diff(500)
            .gt(&10)
            .then_some(((s + 500) / 1000) as u8)
    }

    #[test]
    fn lossless_formats_decode_to_the_encoded_pixels_in_each_order() {
        let img = pattern(7, 5);
        let rgb = img.as_raw().clone();
        for f in [
            ImageFormat::Png,
            ImageFormat::Bmp,
            ImageFormat::Pnm,
            ImageFormat::Tiff,
            ImageFormat::WebP,
        ] {
            let bytes = encode(DynamicImage::ImageRgb8(img.clone()), f);
            assert_eq!(run("RGB", &bytes).unwrap(), (vec![5, 7, 3], rgb.clone()), "{f:?}");
            let bgr: Vec<u8> = rgb.chunks(3).flat_map(|p| [p[2], p[1], p[0]]).collect();
            assert_eq!(run("BGR", &bytes).unwrap(), (vec![5, 7, 3], bgr), "{f:?}");
            let (shape, gray) = run("Grayscale", &bytes).unwrap();
            assert_eq!(shape, [5, 7, 1], "{f:?}");
            let mut checked = 0;
            for (p, &l) in rgb.chunks(3).zip(&gray) {
                if let Some(want) = luma_by_hand(p) {
                    assert_eq!(l, want, "{f:?} pixel {p:?}");
                    checked += 1;
                }
            }
            assert!(checked > 30, "{f:?}: only {checked} pixels away from a tie");
        }
    }

    #[test]
    fn grayscale_matches_pillows_luma_on_ties_too() {
        // Pillow 13's `convert('L')` of these colors, ties (173.5 for the
        // eleventh) included.
        let pillow: [([u8; 3], u8); 12] = [
            ([255, 0, 0], 76),
            ([0, 255, 0], 150),
            ([0, 0, 255], 29),
            ([255, 255, 255], 255),
            ([0, 0, 0], 0),
            ([10, 200, 30], 124),
            ([123, 45, 67], 71),
            ([1, 1, 2], 1),
            ([200, 100, 50], 124),
            ([77, 77, 77], 77),
            ([162, 188, 129], 174),
            ([176, 112, 238], 145),
        ];
        let img = ImageBuffer::from_fn(12, 1, |x, _| Rgb(pillow[x as usize].0));
        let bytes = encode(DynamicImage::ImageRgb8(img), ImageFormat::Png);
        let (shape, gray) = run("Grayscale", &bytes).unwrap();
        assert_eq!(shape, [1, 12, 1]);
        let want: Vec<u8> = pillow.iter().map(|&(_, l)| l).collect();
        assert_eq!(gray, want);
    }

    #[test]
    fn hand_written_ppm_pgm_and_bmp_streams() {
        let mut ppm = b"P6\n2 1\n255\n".to_vec();
        ppm.extend_from_slice(&[1, 2, 3, 250, 251, 252]);
        assert_eq!(
            run("RGB", &ppm).unwrap(),
            (vec![1, 2, 3], vec![1, 2, 3, 250, 251, 252])
        );
        let mut pgm = b"P5 2 1 255 ".to_vec();
        pgm.extend_from_slice(&[9, 200]);
        assert_eq!(
            run("RGB", &pgm).unwrap(),
            (vec![1, 2, 3], vec![9, 9, 9, 200, 200, 200])
        );
        assert_eq!(run("Grayscale", &pgm).unwrap(), (vec![1, 2, 1], vec![9, 200]));

        // A 2×2 24-bit BMP: rows bottom-up, pixels as B, G, R, each row
        // padded to 4 bytes.
        let mut bmp = b"BM".to_vec();
        bmp.extend_from_slice(&(54u32 + 16).to_le_bytes());
        bmp.extend_from_slice(&[0, 0, 0, 0]);
        bmp.extend_from_slice(&54u32.to_le_bytes());
        bmp.extend_from_slice(&40u32.to_le_bytes());
        bmp.extend_from_slice(&2i32.to_le_bytes());
        bmp.extend_from_slice(&2i32.to_le_bytes());
        bmp.extend_from_slice(&1u16.to_le_bytes());
        bmp.extend_from_slice(&24u16.to_le_bytes());
        bmp.extend_from_slice(&[0; 4]); // no compression
        bmp.extend_from_slice(&16u32.to_le_bytes());
        bmp.extend_from_slice(&[0; 16]); // resolution, palette sizes
        bmp.extend_from_slice(&[30, 20, 10, 60, 50, 40, 0, 0]); // bottom row
        bmp.extend_from_slice(&[3, 2, 1, 6, 5, 4, 0, 0]); // top row
        assert_eq!(
            run("RGB", &bmp).unwrap(),
            (vec![2, 2, 3], vec![1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60])
        );
    }

    #[test]
    fn alpha_is_dropped_and_gray_is_spread_to_three_channels() {
        let rgba = RgbaImage::from_fn(3, 2, |x, y| {
            image::Rgba([(x * 80) as u8, (y * 90 + 7) as u8, 33, (x * 120 + y) as u8])
        });
        let bytes = encode(DynamicImage::ImageRgba8(rgba.clone()), ImageFormat::Png);
        let want: Vec<u8> = rgba.as_raw().chunks(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
        assert_eq!(run("RGB", &bytes).unwrap(), (vec![2, 3, 3], want));

        let la = GrayAlphaImage::from_fn(2, 2, |x, y| image::LumaA([(x * 100 + y * 7) as u8, 0]));
        let bytes = encode(DynamicImage::ImageLumaA8(la), ImageFormat::Png);
        let (shape, got) = run("RGB", &bytes).unwrap();
        assert_eq!(shape, [2, 2, 3]);
        assert_eq!(got, [0, 0, 0, 100, 100, 100, 7, 7, 7, 107, 107, 107]);
        // A gray pixel's luma is itself.
        assert_eq!(run("Grayscale", &bytes).unwrap().1, [0, 100, 7, 107]);
    }

    #[test]
    fn sixteen_bit_samples_keep_their_high_byte() {
        let v: [u16; 5] = [0, 255, 256, 0x1234, 65535];
        let gray = ImageBuffer::<Luma<u16>, _>::from_fn(5, 1, |x, _| Luma([v[x as usize]]));
        let bytes = encode(DynamicImage::ImageLuma16(gray), ImageFormat::Png);
        let (shape, got) = run("RGB", &bytes).unwrap();
        assert_eq!(shape, [1, 5, 3]);
        assert_eq!(got, [0, 0, 0, 0, 0, 0, 1, 1, 1, 0x12, 0x12, 0x12, 255, 255, 255]);

        let rgb =
            ImageBuffer::<Rgb<u16>, _>::from_fn(5, 1, |x, _| Rgb([v[x as usize], v[4 - x as usize], 0x8080]));
        let bytes = encode(DynamicImage::ImageRgb16(rgb), ImageFormat::Png);
        let (_, got) = run("BGR", &bytes).unwrap();
        let hi = |s: u16| (s / 256) as u8;
        let want: Vec<u8> = (0..5).flat_map(|x| [0x80, hi(v[4 - x]), hi(v[x])]).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_jpeg_decodes_to_its_shape_and_near_its_colors() {
        // Two flat 8×8 blocks side by side: lossy, but a flat block comes
        // back within a few steps.
        let img = RgbImage::from_fn(16, 8, |x, _| {
            if x < 8 {
                Rgb([200, 40, 90])
            } else {
                Rgb([20, 180, 60])
            }
        });
        let mut bytes = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 100)
            .encode_image(&img)
            .unwrap();
        let (shape, got) = run("RGB", &bytes).unwrap();
        assert_eq!(shape, [8, 16, 3]);
        for (p, want) in got.chunks(3).zip(img.pixels()) {
            for (a, b) in p.iter().zip(want.0) {
                assert!(a.abs_diff(b) <= 4, "{p:?} vs {want:?}");
            }
        }
    }

    #[test]
    fn streams_that_are_no_image_or_damaged_are_op_errors() {
        let png = encode(DynamicImage::ImageRgb8(pattern(9, 9)), ImageFormat::Png);
        for bad in [
            &b""[..],
            b"hello, this is no image",
            &png[..40],
            &[0xff, 0xd8, 0xff, 0xe0, 0, 0x10, b'J', b'F', b'I', b'F'],
            b"P6\n2 1\n255\n\x01",
        ] {
            let e = run("RGB", bad).unwrap_err();
            assert_cause!(e, Op, NAME);
        }
    }

    #[test]
    fn jpeg_2000_and_formats_not_built_in_are_unsupported() {
        let mut jp2 = vec![0, 0, 0, 0x0c, b'j', b'P', b' ', b' ', 0x0d, 0x0a, 0x87, 0x0a];
        jp2.extend_from_slice(&[0, 0, 0, 0x14, b'f', b't', b'y', b'p']);
        let e = run("RGB", &jp2).unwrap_err();
        assert_cause!(e, Unsupported, "JPEG 2000");
        let e = run("RGB", &[0xff, 0x4f, 0xff, 0x51, 0, 0x2f]).unwrap_err();
        assert_cause!(e, Unsupported, "JPEG 2000");
        let e = run("Grayscale", b"GIF89a\x01\x00\x01\x00").unwrap_err();
        assert_cause!(e, Unsupported, "GIF");
    }

    #[test]
    fn bad_attrs_and_inputs_are_errors() {
        let r = OpRegistry::builtin();
        assert_eq!(
            r.make(NAME, &Attrs::new()).unwrap().attrs(),
            Attrs::new().with("pixel_format", "RGB")
        );
        let e = r
            .make(NAME, &Attrs::new().with("pixel_format", "YUV"))
            .unwrap_err();
        assert_cause!(e, Attr, "pixel_format");
        let e = r.make(NAME, &Attrs::new().with("format", "RGB")).unwrap_err();
        assert_cause!(e, Attr, "format");
        let d = decoder("RGB");
        let e = run_vec::<u8>(&*d, &[t(&[2], vec![1i8, 2])]).unwrap_err();
        assert_cause!(e, DType, "u8");
        let e = run_vec::<u8>(&*d, &[t(&[1, 2], vec![1u8, 2])]).unwrap_err();
        assert_cause!(e, Rank, "1-D");
    }

    #[test]
    fn infer_knows_the_channels_but_not_the_size() {
        let x = TypeInfo::new(DType::U8, Some(vec![100]));
        for (pf, c) in [("RGB", 3), ("BGR", 3), ("Grayscale", 1)] {
            let ti = decoder(pf).infer(std::slice::from_ref(&x)).unwrap();
            assert_eq!(ti[0], TypeInfo::new(DType::U8, Some(vec![-1, -1, c])));
        }
        let e = decoder("RGB")
            .infer(&[TypeInfo::new(DType::F32, None)])
            .unwrap_err();
        assert_cause!(e, DType, "u8");
    }
}
