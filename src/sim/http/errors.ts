/**
 * Errors as Argo CD's grpc-gateway writes them: `{error, code, message, details}` where `code`
 * is the gRPC status code and the HTTP status follows grpc-gateway's mapping.
 */
export const GrpcCode = {
  /** A plain Go error the server returns without a status: grpc-gateway answers HTTP 500. */
  Unknown: 2,
  InvalidArgument: 3,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  Unauthenticated: 16,
} as const;

const HTTP_OF_GRPC: Record<number, number> = {
  2: 500,
  3: 400,
  5: 404,
  6: 409,
  7: 403,
  8: 429,
  9: 400,
  10: 409,
  11: 400,
  12: 501,
  13: 500,
  14: 503,
  16: 401,
};

export class SimApiError extends Error {
  readonly httpStatus: number;
  constructor(
    readonly grpcCode: number,
    message: string,
    httpStatus?: number,
  ) {
    super(message);
    this.httpStatus = httpStatus ?? HTTP_OF_GRPC[grpcCode] ?? 500;
  }

  body(): { error: string; code: number; message: string; details: unknown[] } {
    return { error: this.message, code: this.grpcCode, message: this.message, details: [] };
  }
}

/** The message Argo CD returns for a missing app (apierrors.NewNotFound on argoproj.io/applications). */
export const appNotFound = (name: string) =>
  new SimApiError(GrpcCode.NotFound, `applications.argoproj.io "${name}" not found`);
export const appSetNotFound = (name: string) =>
  new SimApiError(GrpcCode.NotFound, `applicationsets.argoproj.io "${name}" not found`);
/** argocommon.PermissionDeniedAPIError: used for "forbidden" and, without project=, for "missing" too. */
export const permissionDenied = () => new SimApiError(GrpcCode.PermissionDenied, 'permission denied');
export const invalidArgument = (message: string) => new SimApiError(GrpcCode.InvalidArgument, message);

/** The controller throws its own SimError carrying `grpcCode`; the REST layer answers with it unchanged. */
export function toApiError(error: unknown): SimApiError | undefined {
  if (error instanceof SimApiError) return error;
  if (error instanceof Error && typeof (error as { grpcCode?: unknown }).grpcCode === 'number') {
    return new SimApiError((error as unknown as { grpcCode: number }).grpcCode, error.message);
  }
  return undefined;
}
