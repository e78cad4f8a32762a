package admissionreview_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stratacfg/strata/internal/admissionreview"
)

// TestHandler answers a review with the request's UID, and refuses a body
// that is too large or no review without asking the answer.
func TestHandler(t *testing.T) {
	asked := 0
	h := admissionreview.Handler(func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		asked++
		if req.Namespace == "bad" {
			return admissionreview.Denied(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "no")
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	post := func(body []byte) (int, *admissionv1.AdmissionReview) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
		var out admissionv1.AdmissionReview
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
		}
		return rec.Code, &out
	}
	review := func(ns string) []byte {
		b, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: types.UID("uid-" + ns), Namespace: ns}})
		return b
	}
	if code, out := post(review("good")); code != http.StatusOK || out.Response == nil || !out.Response.Allowed || out.Response.UID != "uid-good" || out.Request != nil {
		t.Errorf("a good request: %d %+v", code, out)
	}
	if code, out := post(review("bad")); code != http.StatusOK || out.Response.Allowed || out.Response.UID != "uid-bad" || out.Response.Result.Code != 422 {
		t.Errorf("a refused request: %d %+v", code, out.Response)
	}
	asked = 0
	if code, _ := post([]byte(`{"kind": "AdmissionReview"}`)); code != http.StatusBadRequest {
		t.Errorf("a review without a request: %d", code)
	}
	big := append(review("good"), []byte(strings.Repeat(" ", admissionreview.MaxBytes))...)
	if code, _ := post(big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a review over MaxBytes: %d", code)
	}
	if asked != 0 {
		t.Errorf("answer asked %d times of reviews it should never see", asked)
	}
}
