// Package admissionreview is the one AdmissionReview plumbing of strata's
// webhooks (the ConfigMap check of layers/namespaced, the plugins
// example's validator): it reads an admission.k8s.io/v1 AdmissionReview
// from a request, bounded, has a function answer its request, and writes
// the review back with the request's UID, as the API server expects.
package admissionreview

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxBytes bounds a review's body: the API server stores objects of at
// most 3 MiB, and an update carries the old object beside the new.
const MaxBytes = 6 << 20

// Handler serves admission reviews, each request answered by answer in
// the review's own version (admission.k8s.io/v1, or v1beta1, whose
// request and response are the same). A body over MaxBytes is refused
// with 413, and one that cannot be read, or does not decode as an
// AdmissionReview holding a request, with 400, answer not called.
func Handler(answer func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBytes+1))
		switch {
		case err != nil:
			http.Error(w, "the review cannot be read: "+err.Error(), http.StatusBadRequest)
			return
		case len(body) > MaxBytes:
			http.Error(w, "the review is over 6 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil || review.Kind != "AdmissionReview" ||
			review.APIVersion != "admission.k8s.io/v1" && review.APIVersion != "admission.k8s.io/v1beta1" {
			http.Error(w, "not an admission.k8s.io/v1 AdmissionReview", http.StatusBadRequest)
			return
		}
		resp := answer(r.Context(), review.Request)
		resp.UID = review.Request.UID
		review.Request, review.Response = nil, resp
		out, err := json.Marshal(review)
		if err != nil {
			http.Error(w, "encoding the review: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
}

// Denied is a response refusing the request for msg, with code (422 for
// an invalid object) and reason.
func Denied(code int32, reason metav1.StatusReason, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}
