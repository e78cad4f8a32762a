package v1

import "k8s.io/apimachinery/pkg/runtime"

// DeepCopyObject returns a deep copy.
func (p *Policy) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// DeepCopyObject returns a deep copy.
func (b *PolicyBinding) DeepCopyObject() runtime.Object {
	out := *b
	b.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}
