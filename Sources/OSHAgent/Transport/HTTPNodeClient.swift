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

    /// Per datastream: the observation POST prepared once (URL, headers and options set on its own
    /// handle), and the completion adapter made once, so a POST allocates nothing here.
    private final class ObservationChannel {
        let prepared: PreparedRequest
        let contentType: String
        /// The publisher's completion for the POST in flight on `prepared`.
        var pending: ((TransportOutcome) -> Void)?
        private(set) var deliver: (HTTPResult) -> Void = { _ in }

        init(prepared: PreparedRequest, contentType: String) {
            self.prepared = prepared
            self.contentType = contentType
            // Weak: a POST may still be in libcurl when the transport is released (shutdown).
            deliver = { [weak self] r in
                guard let self, let completion = self.pending else { return }
                self.pending = nil
                completion(HTTPNodeClient.outcome(r))
            }
        }
    }

    private var observationChannels: [String: ObservationChannel] = [:]

    func postObservations(
        datastreamID: String, contentType: String, body: ByteBuffer,
        completion: @escaping (TransportOutcome) -> Void
    ) {
        let channel: ObservationChannel
        if let cached = observationChannels[datastreamID], cached.contentType == contentType {
            channel = cached
        } else {
            let format: ScalarFormat = contentType == MediaType.sweJSON ? .sweJSON : .omJSON
            channel = ObservationChannel(
                prepared: http.prepare(builder.postObservations(datastreamID: datastreamID, format: format)),
                contentType: contentType)
            observationChannels[datastreamID] = channel
        }
        // The body goes from the publisher's buffer straight to curl: no copy.
        let bytes = UnsafeRawBufferPointer(start: body.base, count: body.count)
        guard channel.pending == nil else {
            // A second POST while one is in flight (the spool's drain beside the live stream).
            http.send(channel.prepared, body: bytes) { r in completion(HTTPNodeClient.outcome(r)) }
            return
        }
        channel.pending = completion
        http.send(channel.prepared, body: bytes, completion: channel.deliver)
    }

    /// A transport failure is status 0 with curl's explanation, as the publisher's verdicts expect.
    static func outcome(_ r: HTTPResult) -> TransportOutcome {
        TransportOutcome(
            status: r.error == nil ? r.status : 0, transportError: r.error.map { "\($0)" }, body: r.body,
            location: r.location)
    }

    private var videoRequests: [String: CSRequest] = [:]

    func postVideo(datastreamID: String, body: ByteBuffer, completion: @escaping (TransportOutcome) -> Void) {
        let request: CSRequest
        if let cached = videoRequests[datastreamID] {
            request = cached
        } else {
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
