// Package v1beta1 is the preferred version of ComponentConfiguration.
//
// Its types, defaults and conversions are written by hand: for a kind of a
// dozen fields that is shorter than the generator setup, and the round-trip
// test in the scheme package proves the conversions lossless. A kind of a
// hundred fields should use deepcopy-gen, defaulter-gen and conversion-gen.
package v1beta1
