package admissionreview_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
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

// TestHandlerRefusesWhatIsNoReview: a body that is no AdmissionReview (no
// apiVersion and kind, or another kind's) is refused with 400, as the
// doc says, not answered with a review the API server cannot read.
func TestHandlerRefusesWhatIsNoReview(t *testing.T) {
	h := admissionreview.Handler(func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	for _, body := range []string{
		`{"request": {"uid": "u"}}`,
		`{"apiVersion": "v1", "kind": "ConfigMap", "request": {"uid": "u"}}`,
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, rec.Code, rec.Body)
		}
	}
}

// TestHandlerMalformedBody: a body that breaks off or is malformed (here
// a bad chunk) is a bad request, 400, not "over 6 MiB" (413).
func TestHandlerMalformedBody(t *testing.T) {
	srv := httptest.NewServer(admissionreview.Handler(func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}))
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("a malformed chunked body: %d %s, want 400", resp.StatusCode, b)
	}
}
