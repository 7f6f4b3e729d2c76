import OSHCore
import OSHPlatform

/// The CS API over libcurl, as registration and the publisher see it (the publish bench too).
public func nodeTransport(http: HTTPClient, builder: CSRequestBuilder) -> NodeClient & PublisherTransport {
    HTTPNodeClient(http: http, builder: builder)
}

/// The CS API over libcurl, as registration and the publisher see it.
final class HTTPNodeClient: NodeClient, PublisherTransport, VideoTransport {
    let http: HTTPClient
    let builder: CSRequestBuilder

    init(http: HTTPClient, builder: CSRequestBuilder) {
        self.http = http
        self.builder = builder
    }

    func send(_ request: CSRequest, completion: @escaping (TransportOutcome) -> Void) {
        http.send(request) { r in completion(HTTPNodeClient.outcome(r)) }
    }

    /// Observation requests per datastream id and format: built once, not per POST.
    private var observationRequests: [String: CSRequest] = [:]

    func postObservations(datastreamID: String, contentType: String, body: ByteBuffer,
                          completion: @escaping (TransportOutcome) -> Void) {
        let key = datastreamID + contentType
        let request: CSRequest
        if let cached = observationRequests[key] {
            request = cached
        } else {
            let format: ScalarFormat = contentType == MediaType.sweJSON ? .sweJSON : .omJSON
            request = builder.postObservations(datastreamID: datastreamID, format: format)
            observationRequests[key] = request
        }
        // The body goes from the publisher's buffer straight to curl: no copy.
        http.send(request, body: UnsafeRawBufferPointer(start: body.base, count: body.count)) { r in
            completion(HTTPNodeClient.outcome(r))
        }
    }

    /// A transport failure is status 0 with curl's explanation, as the publisher's verdicts expect.
    static func outcome(_ r: HTTPResult) -> TransportOutcome {
        TransportOutcome(status: r.error == nil ? r.status : 0, transportError: r.error.map { "\($0)" }, body: r.body,
                         location: r.location)
    }

    private var videoRequests: [String: CSRequest] = [:]

    func postVideo(datastreamID: String, body: ByteBuffer, completion: @escaping (TransportOutcome) -> Void) {
        let request: CSRequest
        if let cached = videoRequests[datastreamID] { request = cached } else {
            request = builder.postVideo(datastreamID: datastreamID)
            videoRequests[datastreamID] = request
        }
        http.send(request, body: UnsafeRawBufferPointer(start: body.base, count: body.count)) { r in
            completion(HTTPNodeClient.outcome(r))
        }
    }

    func probe(completion: @escaping (TransportOutcome) -> Void) {
        http.send(builder.landingPage()) { r in
            completion(HTTPNodeClient.outcome(r))
        }
    }
}
