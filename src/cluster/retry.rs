//! API requests retried as client-go retries them, so a busy API server's priority and fairness
//! slows a run down rather than failing its nodes.
//!
//! client-go (`rest/with_retry.go`, `IsNextRetry` and `checkWait`; `rest/request.go`,
//! `maxRetries: 10`) retries a response of 429 or any 5xx only when it carries `Retry-After` in
//! whole seconds (`retryAfterSeconds`: `strconv.Atoi`), waits exactly that long, for any verb
//! whose body can be sent again, at most ten times; then the answer stands. The API server's
//! priority and fairness rejects a request it cannot queue with 429 and `Retry-After: 1`
//! (`k8s.io/apiserver/pkg/server/filters`, `tooManyRequests`: `http.Error` with "Too many
//! requests, please try again later."). A retry is the same request again: the requests per
//! node do not grow, only the throttled ones are sent twice.
//!
//! kube 5.0 has a retry of its own (`kube::client::retry::RetryPolicy`, on by default): 429,
//! 503 and 504 with or without `Retry-After`, an exponential back-off from 5 ms, fifteen times.
//! It is turned off for this one, so the client behaves as kubectl's does against the same
//! server. client-go also retries a GET whose connection was reset; that is not done here.

use std::time::Duration;

use hyper::header::RETRY_AFTER;
use hyper::{Request, Response};
use kube::client::{Body, ClientBuilder};
use kube::{Client, Config};
use tower::BoxError;
use tower::retry::{Policy, RetryLayer};

/// client-go's `maxRetries` for a request (`rest/request.go`).
pub const MAX_RETRIES: u32 = 10;

/// The longest `Retry-After` waited for: far past what priority and fairness asks (1 s), short
/// of a run's deadline; a server asking more is answered by giving up (its error stands), not
/// by a run that seems to hang.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// Requests waiting for the client (a retry needs a service it can call again; kube's
/// stack is one boxed service): more than fleet ever has in flight.
const QUEUE: usize = 1024;

/// A response's status and `Retry-After` after `attempt` retries → how long to wait before the
/// next, or `None` to give up and hand the response on.
pub fn wait_before_retry(status: u16, retry_after: Option<&str>, attempt: u32) -> Option<Duration> {
    if attempt >= MAX_RETRIES || !(status == 429 || (500..600).contains(&status)) {
        return None;
    }
    // `strconv.Atoi`: an optional sign and decimal digits; a negative wait is none.
    let seconds: i64 = retry_after?.trim().parse().ok()?;
    let wait = Duration::from_secs(seconds.max(0).unsigned_abs());
    (wait <= MAX_WAIT).then_some(wait)
}

/// The client for `config`, its requests retried by [`wait_before_retry`].
pub fn client(mut config: Config) -> Result<Client, kube::Error> {
    config.default_retry = false;
    let builder = ClientBuilder::try_from(config)?;
    let layers = tower::ServiceBuilder::new()
        .layer(RetryLayer::new(ApiRetry::default()))
        .layer(tower::buffer::BufferLayer::new(QUEUE));
    Ok(builder.with_layer(&layers).build())
}

/// [`wait_before_retry`] as tower's retry policy: one per request (tower clones it for each).
#[derive(Debug, Clone, Default)]
pub struct ApiRetry {
    attempts: u32,
}

impl<B> Policy<Request<Body>, Response<B>, BoxError> for ApiRetry {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _request: &mut Request<Body>,
        result: &mut Result<Response<B>, BoxError>,
    ) -> Option<Self::Future> {
        let response = result.as_ref().ok()?;
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok());
        let wait = wait_before_retry(response.status().as_u16(), retry_after, self.attempts)?;
        self.attempts += 1;
        Some(tokio::time::sleep(wait))
    }

    /// The same request again, when its body can be sent twice (kube's bodies of bytes can;
    /// a stream cannot, and is not retried, as client-go does not rewind an opaque reader).
    fn clone_request(&mut self, request: &Request<Body>) -> Option<Request<Body>> {
        let body = request.body().try_clone()?;
        let mut again = Request::builder()
            .method(request.method().clone())
            .uri(request.uri().clone())
            .version(request.version())
            .body(body)
            .ok()?;
        *again.headers_mut() = request.headers().clone();
        *again.extensions_mut() = request.extensions().clone();
        Some(again)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_and_fairness_rejection_waits_its_retry_after() {
        assert_eq!(
            wait_before_retry(429, Some("1"), 0),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            wait_before_retry(503, Some("3"), 9),
            Some(Duration::from_secs(3))
        );
        // Any 5xx with Retry-After, as checkWait reads it.
        assert_eq!(wait_before_retry(500, Some("0"), 0), Some(Duration::ZERO));
    }

    #[test]
    fn without_retry_after_in_whole_seconds_the_answer_stands() {
        assert_eq!(wait_before_retry(429, None, 0), None);
        assert_eq!(wait_before_retry(503, None, 0), None);
        // An HTTP date is valid HTTP, but client-go reads seconds only.
        assert_eq!(
            wait_before_retry(429, Some("Wed, 21 Oct 2026 07:28:00 GMT"), 0),
            None
        );
        assert_eq!(wait_before_retry(429, Some("1.5"), 0), None);
    }

    #[test]
    fn other_statuses_are_never_retried() {
        for status in [200, 201, 400, 401, 403, 404, 409, 410, 413, 422] {
            assert_eq!(wait_before_retry(status, Some("1"), 0), None, "{status}");
        }
    }

    #[test]
    fn the_eleventh_attempt_gives_up() {
        assert!(wait_before_retry(429, Some("1"), MAX_RETRIES - 1).is_some());
        assert_eq!(wait_before_retry(429, Some("1"), MAX_RETRIES), None);
    }

    #[test]
    fn a_negative_wait_is_none_and_a_huge_one_is_not_waited_for() {
        assert_eq!(wait_before_retry(429, Some("-5"), 0), Some(Duration::ZERO));
        assert_eq!(
            wait_before_retry(429, Some("+2"), 0),
            Some(Duration::from_secs(2))
        );
        assert_eq!(wait_before_retry(429, Some("61"), 0), None);
        assert_eq!(
            wait_before_retry(429, Some("99999999999999999999"), 0),
            None
        );
    }

    /// tower clones the policy for each request: one request's retries never count against
    /// another's.
    #[tokio::test]
    async fn each_request_counts_its_own_attempts() {
        let throttled = || {
            Ok::<_, BoxError>(
                Response::builder()
                    .status(429)
                    .header(RETRY_AFTER, "0")
                    .body(())
                    .expect("response"),
            )
        };
        let fresh = ApiRetry::default();
        let mut used = fresh.clone();
        let mut request = Request::new(Body::from(b"{}".to_vec()));
        for _ in 0..MAX_RETRIES {
            assert!(used.retry(&mut request, &mut throttled()).is_some());
        }
        assert!(used.retry(&mut request, &mut throttled()).is_none());
        let mut next = fresh.clone();
        assert!(next.retry(&mut request, &mut throttled()).is_some());
        let again = Policy::<_, Response<()>, BoxError>::clone_request(&mut next, &request);
        assert!(again.is_some(), "a body of bytes is sent again");
    }
}
