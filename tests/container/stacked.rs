//! A multi-part binding as one matrix (`model::Stacked`): the rule the CLI and the browser API
//! share for which part serves a gathered row and where each part's product columns go.

use ninfer_wgpu::model::Stacked;
use ninfer_wgpu::{EncodedTensor, Format, Layout, TensorDesc};

fn fp32(rows: usize, k: usize, first: f32) -> EncodedTensor<'static> {
    let bytes: Vec<u8> = (0..rows * k).flat_map(|i| (first + i as f32).to_le_bytes()).collect();
    EncodedTensor::new(TensorDesc::new(Format::Fp32, Layout::ContiguousLeV1, &[rows, k]), bytes).unwrap()
}

#[test]
fn parts_stack_by_rows_and_route_requests_and_columns() {
    let s = Stacked::new(vec![fp32(2, 3, 0.0), fp32(3, 3, 100.0)], "matvec").unwrap();
    assert_eq!((s.n, s.k), (5, 3));
    assert_eq!(s.first_rows(), [0, 2]);
    // Rows 4, 0, 2, 1, 4 in request order: part 0 serves requests 1 and 3, part 1 the others.
    let routes = s.route(&[4, 0, 2, 1, 4]).unwrap();
    assert_eq!(routes, vec![vec![(1, 0), (3, 1)], vec![(0, 2), (2, 0), (4, 2)]]);
    let err = s.route(&[5]).unwrap_err().to_string();
    assert!(err.contains('5') && err.contains("N = 5"), "{err}");
    // Two columns: each part's rows land in both columns of all five rows.
    let mut y = vec![0u32; 10];
    s.place_columns(0, &[1, 2, 11, 12], 2, &mut y).unwrap();
    s.place_columns(1, &[3, 4, 5, 13, 14, 15], 2, &mut y).unwrap();
    assert_eq!(y, [1, 2, 3, 4, 5, 11, 12, 13, 14, 15]);
    assert!(s.place_columns(1, &[3, 4], 2, &mut y).is_err(), "a short part is an error, not a panic");
    assert!(s.place_columns(7, &[], 2, &mut y).is_err(), "a part past the last is an error");
}

#[test]
fn parts_of_different_k_or_rank_are_refused_naming_the_op() {
    let err = Stacked::new(vec![fp32(2, 3, 0.0), fp32(2, 4, 0.0)], "gather").err().unwrap().to_string();
    assert!(err.contains("gather") && err.contains("one K"), "{err}");
}
