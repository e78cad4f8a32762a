// Package config holds the internal types of the example component's
// configuration kind, ComponentConfiguration in group
// component.example.strata.dev. Validation works on these types only; the
// versioned packages v1alpha1 and v1beta1 hold what users write.
package config
