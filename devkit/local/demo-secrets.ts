/** CALLBACK_SECRETS of the local stack when it is not set: the documented demo appKey and secret. */
export const DEFAULT_SECRETS = { 'demo-app': ['demo-secret'] } as const;
