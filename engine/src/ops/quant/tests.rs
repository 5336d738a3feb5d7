use super::*;
use crate::error::Error;
use crate::ops::testutil::{op, run_all, run_vec, t};

fn quantize(a: Attrs) -> Arc<dyn Op> {
    op("quantize_linear", a)
}

fn dequantize(a: Attrs) -> Arc<dyn Op> {
    op("dequantize_linear", a)
}

#[test]
fn quantize_rounds_half_to_even_and_saturates() {
    // x / 2 = 0.5, 1.5, 2.5, -1, 300, -300: rint gives 0, 2, 2, -1.
    let x = t(&[6], vec![1.0f32, 3.0, 5.0, -2.0, 600.0, -600.0]);
    let s = t(&[], vec![2.0f32]);
    let (_, y) = run_vec::<u8>(&*quantize(Attrs::new()), &[x.clone(), s.clone()]).unwrap();
    assert_eq!(y, [0, 2, 2, 0, 255, 0]);
    let z = t(&[1], vec![-1i8]);
    let (_, y) = run_vec::<i8>(&*quantize(Attrs::new()), &[x, s, z]).unwrap();
    assert_eq!(y, [-1, 1, 1, -2, 127, -128]);
}

#[test]
fn quantize_lines_up_per_axis_and_per_block() {
    // x [2, 4]; per axis 1 scales 1, 2, 4, 8; blocks of 2 along axis 1.
    let x = t(&[2, 4], vec![8.0f32, 8.0, 8.0, 8.0, 16.0, 16.0, 16.0, 16.0]);
    let per_axis = t(&[4], vec![1.0f32, 2.0, 4.0, 8.0]);
    let (_, y) = run_vec::<u8>(&*quantize(Attrs::new()), &[x.clone(), per_axis]).unwrap();
    assert_eq!(y, [8, 4, 2, 1, 16, 8, 4, 2]);
    let blocked = t(&[2, 2], vec![1.0f32, 2.0, 4.0, 8.0]);
    let a = Attrs::new().with("axis", 1).with("block_size", 2);
    let (_, y) = run_vec::<u8>(&*quantize(a), &[x.clone(), blocked]).unwrap();
    assert_eq!(y, [8, 8, 4, 4, 4, 4, 2, 2]);
    // A scale that fits neither way is a shape error naming the op.
    let bad = t(&[3], vec![1.0f32; 3]);
    let e = run_all(&*quantize(Attrs::new()), &[x, bad]).unwrap_err();
    assert!(matches!(e, Error::Shape(_)), "{e}");
}

#[test]
fn quantize_output_dtype_comes_from_the_zero_point_or_the_attr() {
    let x = t(&[2], vec![-70000.0f32, 70000.0]);
    let s = t(&[], vec![1.0f32]);
    let a = Attrs::new().with("dtype", "i16");
    let (_, y) = run_vec::<i16>(&*quantize(a), &[x.clone(), s.clone()]).unwrap();
    assert_eq!(y, [-32768, 32767]);
    let a = Attrs::new().with("dtype", "i16");
    let e = run_all(&*quantize(a), &[x.clone(), s.clone(), t(&[], vec![0u8])]).unwrap_err();
    assert!(matches!(e, Error::DType(_)), "{e}");
    let a = Attrs::new().with("dtype", "i32");
    assert!(matches!(
        run_all(&*quantize(a), &[x, s]).unwrap_err(),
        Error::DType(_)
    ));
}

#[test]
fn dequantize_subtracts_the_zero_point_and_scales_per_axis() {
    let x = t(&[2, 2], vec![0u8, 10, 255, 128]);
    let s = t(&[2], vec![0.5f32, 2.0]);
    let z = t(&[2], vec![10u8, 128]);
    let (_, y) = run_vec::<f32>(&*dequantize(Attrs::new()), &[x, s, z]).unwrap();
    assert_eq!(y, [-5.0, -236.0, 122.5, 0.0]);
    // An f16 scale gives an f16 output; i32 x (a bias) takes no zero point.
    let x = t(&[2], vec![3i32, -4]);
    let s = t(&[], vec![0.25f32]).cast(DType::F16).unwrap();
    let o = run_all(&*dequantize(Attrs::new()), &[x, s]).unwrap();
    assert_eq!(o[0].dtype(), DType::F16);
    assert_eq!(o[0].to_f64_vec().unwrap(), [0.75, -1.0]);
    let e = run_all(
        &*dequantize(Attrs::new()),
        &[t(&[1], vec![1u8]), t(&[], vec![1.0f32]), t(&[], vec![1i8])],
    )
    .unwrap_err();
    assert!(matches!(e, Error::DType(_)), "{e}");
}

#[test]
fn dynamic_quantize_matches_onnx_example() {
    // ONNX's DynamicQuantizeLinear example: range [-3, 2].
    let x = t(&[6], vec![0.0f32, 2.0, -3.0, -2.5, 1.34, 0.5]);
    let o = run_all(&*op("dynamic_quantize_linear", Attrs::new()), &[x]).unwrap();
    assert_eq!(
        o[0].to_array::<u8>().unwrap().into_raw_vec_and_offset().0,
        [153, 255, 0, 26, 221, 179]
    );
    assert_eq!(
        o[1].to_array::<f32>().unwrap().into_raw_vec_and_offset().0,
        [5.0f32 / 255.0]
    );
    assert_eq!(o[2].to_array::<u8>().unwrap().into_raw_vec_and_offset().0, [153]);
    // All zeros: scale 1, zero point 0.
    let o = run_all(
        &*op("dynamic_quantize_linear", Attrs::new()),
        &[t(&[2], vec![0.0f32; 2])],
    )
    .unwrap();
    assert_eq!(o[1].to_f64_vec().unwrap(), [f64::from(1.0f32 / 255.0)]);
    assert_eq!(o[2].to_f64_vec().unwrap(), [0.0]);
}

#[test]
fn matmul_integer_centers_both_operands() {
    // ONNX's MatMulInteger example.
    let a = t(&[4, 3], vec![11u8, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0]);
    let b = t(&[3, 2], vec![1u8, 4, 2, 5, 3, 6]);
    let m = op("matmul_integer", Attrs::new());
    let (s, y) = run_vec::<i32>(
        &*m,
        &[a.clone(), b.clone(), t(&[], vec![12u8]), t(&[], vec![0u8])],
    )
    .unwrap();
    assert_eq!(s, [4, 2]);
    assert_eq!(y, [-38, -83, -44, -98, -50, -113, -56, -128]);
    // Per-row a zero points and per-column b zero points.
    let (_, y) = run_vec::<i32>(&*m, &[a, b, t(&[4], vec![11u8, 10, 9, 8]), t(&[2], vec![1u8, 4])]).unwrap();
    // Row r of a − zp is [0, -4, -8]; the columns of b − zp are [0, 1, 2] and [0, 1, 2].
    assert_eq!(y, [-20, -20, -20, -20, -20, -20, -20, -20]);
    let e = run_all(
        &*m,
        &[
            t(&[1, 1], vec![1i8]),
            t(&[1, 1], vec![1u8]),
            t(&[], vec![0u8]),
            t(&[], vec![0u8]),
        ],
    )
    .unwrap_err();
    assert!(matches!(e, Error::DType(_)), "{e}");
}

#[test]
fn conv_integer_matches_onnx_example() {
    // ONNX's ConvInteger example without padding, then with pads 1.
    let x = t(&[1, 1, 3, 3], (2u8..11).collect());
    let w = t(&[1, 1, 2, 2], vec![1u8; 4]);
    let zx = t(&[], vec![1u8]);
    let zw = t(&[1], vec![0u8]);
    let c = op("conv_integer", Attrs::new());
    let ins = [x, w, zx, zw];
    let (s, y) = run_vec::<i32>(&*c, &ins).unwrap();
    assert_eq!(s, [1, 1, 2, 2]);
    assert_eq!(y, [12, 16, 24, 28]);
    let padded = op("conv_integer", Attrs::new().with("pads", vec![1i64, 1, 1, 1]));
    let (s, y) = run_vec::<i32>(&*padded, &ins).unwrap();
    assert_eq!(s, [1, 1, 4, 4]);
    assert_eq!(y, [1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9]);
    // Per-output-channel weight zero points.
    let w2 = t(&[2, 1, 1, 1], vec![3u8, 5]);
    let (_, y) = run_vec::<i32>(
        &*c,
        &[
            t(&[1, 1, 1, 1], vec![4u8]),
            w2,
            t(&[], vec![0u8]),
            t(&[2], vec![1u8, 2]),
        ],
    )
    .unwrap();
    assert_eq!(y, [8, 12]);
}
