// Package v1alpha1 is the older version of ComponentConfiguration. It is
// deprecated: v1beta1 renamed profiling to enableProfiling. Its defaults
// and conversions go through v1beta1, so the two versions cannot drift.
package v1alpha1
