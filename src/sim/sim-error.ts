export type SimErrorCode = 'not_found' | 'failed_precondition' | 'invalid_argument';
const GRPC_CODES: Record<SimErrorCode, number> = { invalid_argument: 3, not_found: 5, failed_precondition: 9 };

/** An error the REST layer maps to Argo CD's `{error, code, message}` body (code = gRPC code). */
export class SimError extends Error {
  readonly grpcCode: number;
  constructor(
    readonly code: SimErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'SimError';
    this.grpcCode = GRPC_CODES[code];
  }
}
